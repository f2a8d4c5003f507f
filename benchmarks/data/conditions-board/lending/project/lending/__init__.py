"""A lending library: loans, fines, holds, the catalogue, members, renewals, reading lists, inter-library requests and donations."""
