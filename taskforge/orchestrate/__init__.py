"""Running the stages: the generate pipeline, its resume journal, the Ray executor."""
