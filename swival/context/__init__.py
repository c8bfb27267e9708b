"""What the model sees: token budget, caps, compaction, ledger, transcript.

The agent uses `ContextEngine` (swival.context.engine); everything else here is its
parts, each testable on its own.
"""
