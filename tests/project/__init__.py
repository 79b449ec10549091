"""The project as a whole: outputs/ manifests, packaging, stdlib-only runtime, test tooling."""
