"""Settings tree: base (shared, from the environment) -> local / test / production."""
