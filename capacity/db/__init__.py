"""Database plumbing shared by the placers and services: cursors, names, literals, retry."""
