"""Files `calipers init` copies into a new project: a kelvin.yaml, three cases and an example
pipeline."""
