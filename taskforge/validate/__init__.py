"""Whether a removal makes a task: the remaining suite green, the hidden tests red, adequacy."""
