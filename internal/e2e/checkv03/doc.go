// Package checkv03 runs the black-box checker (package servercheck) against the kit
// in front of a2a-go's A2A v0.3 handlers (a2acompat/a2av0, which bring a2a-go v0.3.x,
// so they live in this module rather than the library's): the checker reads a v0.3
// card and speaks v0.3's wire on both bindings.
package checkv03
