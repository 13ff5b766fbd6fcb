// Package testkit is what the kit's tests, benchmarks and harnesses share: one
// controllable a2a-go agent ([Agent]), one builder of real a2a-go servers, bare or
// behind the kit ([Config], [New], [Start], [NewServer]), a proxy that loses
// responses ([NewProxy]), an index whose operations fail, hang or slow down on
// request ([FaultyIndex]), and the openers of the bundled indexes ([Open],
// [ForTest]) with the SQLite DSN sqlstore's documentation recommends ([SQLiteDSN]).
//
// The v0.3 handlers need a2a-go v0.3.x, which the library's users must not inherit;
// they live in the internal/e2e module.
package testkit
