"""Reports: terminal tables, versioned JSON, and (later) self-contained HTML."""
