"""The database half of placement: node views from SQL, the shortlist, the guarded commit, the placers."""
