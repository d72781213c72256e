"""Where in the user's code the time went: nn.Module instances and source lines, forward
and backward, and what compiled kernels stand for."""
