"""Changes after a stage ran: a founder's change request, and the computed impact of any change on
the concept anchor's invariants."""
