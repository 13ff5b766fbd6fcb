package testdb

import (
	"context"
	"database/sql/driver"
	"errors"
)

// CountingConnector opens connections of a real driver that pass every statement they
// run to a count function before running it: the tests that hold a path to its
// number of round trips open their database on one (sql.OpenDB). The connections
// refuse to prepare statements, so that none runs uncounted.
type CountingConnector struct {
	drv   driver.Driver
	dsn   string
	count func(query string)
}

// NewCountingConnector returns a CountingConnector that opens dsn with drv and calls
// count with each statement's text; count must be safe for concurrent use.
func NewCountingConnector(drv driver.Driver, dsn string, count func(query string)) *CountingConnector {
	return &CountingConnector{drv: drv, dsn: dsn, count: count}
}

// Connect implements driver.Connector.
func (c *CountingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, count: c.count}, nil
}

// Driver implements driver.Connector.
func (c *CountingConnector) Driver() driver.Driver { return c.drv }

type countingConn struct {
	driver.Conn
	count func(query string)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, errors.New("counting driver: the driver has no ExecContext")
	}
	c.count(query)
	return e.ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("counting driver: the driver has no QueryContext")
	}
	c.count(query)
	return q.QueryContext(ctx, query, args)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return nil, errors.New("counting driver: statements are not prepared")
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}
