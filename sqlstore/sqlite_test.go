//go:build cgo

package sqlstore_test

import "testing"

func TestSQLite(t *testing.T) { testStore(t, openSQLite) }
