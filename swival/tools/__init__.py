"""What the model can do: one module per tool, gathered by `registry.py`."""
