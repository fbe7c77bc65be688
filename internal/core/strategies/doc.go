// Package strategies is the strategy catalogue and the validation of memory
// definitions: the seven frozen descriptors (what each kind does, which
// memory types accept it, what it requires, its fields with their types,
// defaults and bounds), the catalogue as a deployment sees it (offerable or
// what is missing), and the definition pipeline — shape, type dispatch,
// fields, requirements, in that order — whose every refusal names the field,
// shows a value that works and points at the catalogue. It also holds the
// defaults other areas read a strategy with (TopKDefaults, EmbedderFor).
package strategies
