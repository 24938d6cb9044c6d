"""Writing a task: workspace, patches, statement, archives; loading one back."""
