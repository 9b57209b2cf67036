// Package config reads the one YAML file that describes a whole cluster
// (cluster.example.yaml), applies defaults, validates it, and resolves the
// runtime settings of one node. Every error names the field, and the file
// line where it is known. Unknown fields are errors.
//
// It knows nothing of flags (package main applies them) and starts nothing.
package config
