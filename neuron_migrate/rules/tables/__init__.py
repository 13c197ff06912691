"""Row tables (see rules/rows.py), one module per rule family: the names a table can answer, with
the text of their next steps. The family's rule module keeps only the rewrites that need code."""
