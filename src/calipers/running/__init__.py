"""Running pipelines: invocation with retries and a cache, cases, perturbations, executors."""
