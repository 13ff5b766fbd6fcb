// Package testkit is what the kit's tests, benchmarks and harnesses share, in every
// module: one controllable a2a-go agent ([Agent]), one builder of real a2a-go
// servers, bare or behind the kit ([Config], [New], [Start], [NewServer]), a proxy
// that loses responses ([NewProxy]), an index whose operations fail, hang or slow down
// on request ([FaultyIndex]), a task store that forgets tasks on request
// ([HidingStore]), helper processes ([BuildCommand], [StartCommand]), the
// PostgreSQL test database's environment ([PostgresDSN]), and the benchmarks' load
// driver and figures ([Parallel], [Alternate], [WarmUp], [FreshClaims], [ReportClaims]).
//
// Its subpackages: testdb opens the bundled indexes on SQLite or PostgreSQL (it
// pulls the SQL drivers, which this package does not, so that grpcbinding's tests
// can use the kit); wireclient sends A2A v1.0 sends as raw wire JSON and classifies the
// answers, for the load, crash, fault and benchmark harnesses; sendtest, on top of it,
// sends malformed keys, padded bodies and streams it reads event by event, for the
// tests of servers behind the kit (anyserver, routers); examplerun starts the
// examples module's servers in-process and checks them, for the examples' tests;
// storetest holds the Extend tests the server-backed stores (sqlstore, redisstore)
// run alike on two handles.
//
// The v0.3 handlers need a2a-go v0.3.x, which the library's users must not inherit;
// they live in the internal/e2e module.
package testkit
