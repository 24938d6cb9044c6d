"""What a task must not give away: needles from the removed code, the workspace and image audit."""
