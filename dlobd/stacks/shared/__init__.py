"""What several stacks share: a log format or a way of launching that is more than one stack's.
A stack module imports these, never another stack module."""
