// Package doccommands holds tests that keep the commands Herald's
// documentation tells users and developers to run working as printed:
// `make` targets, `go test -run/-bench` patterns and the environment knobs
// the docs name. It has no code of its own.
package doccommands
