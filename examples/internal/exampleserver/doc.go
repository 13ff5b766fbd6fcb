// Package exampleserver is the A2A server the examples share: an echo agent that counts
// its runs, the a2a-go request handler that runs it behind the kit's adapter, the
// agent card, the key index named by the -store flag (a SQLite file or a PostgreSQL
// database), and serving until the process is told to stop.
//
// The examples differ only in how they route requests: examples/stdlib mounts the
// handler on net/http's ServeMux, examples/chi on chi routes. Each keeps the part a
// reader is looking for, the middleware in front of the routes, in its own main.go.
//
// Every run of the agent adds one to the expvar agent_runs, which the examples serve
// at GET /debug/vars, so anyone can see from outside how often the agent really ran.
// The count is per process: servers started in one process share it.
package exampleserver
