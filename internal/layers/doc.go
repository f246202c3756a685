// Package layers holds the module's layering, written down once: its test
// fails when a package imports one of a layer above its own, or when a
// package has no layer. docs/architecture.md draws the same map.
package layers
