"""Adapters that put taskforge episodes behind agent frameworks' own interfaces."""
