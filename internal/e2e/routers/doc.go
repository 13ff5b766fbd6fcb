// Package routers tests the kit installed in routers that keep routing state in the
// request context: chi v5 (r.Use(idem)) and gorilla/mux (r.Use), against the same
// matrix as the standard library's ServeMux: every row of the README's "What clients
// see" table, on both bindings, unary and streaming, with a2a-go's server and the
// adapter behind the router (SPEC §6, "Routers and proxies are transparent").
package routers
