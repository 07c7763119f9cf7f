"""The tools the model can call: `base` (what a tool is), `registry`, `builtin` (the set
every session starts with) and one module per tool family.

Empty on purpose: importing one tool's module must not load every other."""
