"""Pure domain rules and math: standard library only, no Django."""
