"""What-if: replay a trace's dependency graph with its recorded work and predict the step
after a change (``replay``, the changes in ``changes``)."""
