"""People: who may do what (roles), the record of what they decided, and the mail that tells
reviewers a gate waits."""
