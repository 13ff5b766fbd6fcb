package redisstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/a2akit/idempotency"
)

// A record is the value of a key's Redis string: seven MessagePack values, one after
// the other, packed by the store (a new claim) or by the scripts (cmsgpack, built into Redis's
// Lua), read by both:
//
//	m  the message id that claimed the key
//	k  the fencing token, as decimal text
//	c  the claim time, microseconds since the Unix epoch; false in a relative record
//	l  the lease end, in the same unit; the lease's length in a relative record
//	e  the end of the key's time to live, in the same unit; the TTL in milliseconds
//	   in a relative record
//	t  the bound task id, empty until bound
//	r  the bound reply, empty until bound
//
// A relative record is what a new claim writes on the server's clock, without reading
// it: SET name record NX PX ttl puts the key's expiry at the server's millisecond X
// plus ttl, and the record's times follow from the expiry E (PEXPIRETIME) alone:
// c = E - ttl + 1 ms, the first millisecond after the claim (so that neither the lease
// nor the TTL is cut short by the rounding), l = c + the lease, and e = E + 1 ms, the
// moment Redis counts the key as expired (it deletes a key once its clock is past E).
// So on the server's clock a key Redis still holds is within its time to live, and
// one it no longer holds is not: the store needs no clock to tell. The scripts turn a
// relative record into an absolute one the first time they rewrite it (a takeover, a
// bind, an extension), with the same times. On a given clock ([Options.Now]) every
// record is absolute, with e from that clock, and a key Redis still holds may be past
// e.
type rec struct {
	m, k     string
	relative bool
	c, l, e  int64
	t, r     string
}

// bound reports whether the record holds a task id or a reply.
func (f rec) bound() bool { return f.t != "" || f.r != "" }

// record returns f as an [idempotency.Record] (f absolute).
func (f rec) record() idempotency.Record {
	r := idempotency.Record{
		MessageID:      f.m,
		TaskID:         f.t,
		ClaimedAt:      time.UnixMicro(f.c),
		LeaseExpiresAt: time.UnixMicro(f.l),
	}
	if f.r != "" {
		r.Reply = []byte(f.r)
	}
	return r
}

// pack appends f in MessagePack to b, as cmsgpack.pack would: strings as str, times
// as unsigned integers, a relative record's c as false.
func (f rec) pack(b []byte) []byte {
	b = packStr(b, f.m)
	b = packStr(b, f.k)
	if f.relative {
		b = append(b, 0xc2)
	} else {
		b = packUint(b, uint64(f.c))
	}
	b = packUint(b, uint64(f.l))
	b = packUint(b, uint64(f.e))
	b = packStr(b, f.t)
	return packStr(b, f.r)
}

func packStr(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func packUint(b []byte, n uint64) []byte {
	switch {
	case n < 0x80:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

var errMalformed = errors.New("malformed record")

// unpack reads a record written by pack or by the scripts' cmsgpack.pack.
func unpack(v string) (rec, error) {
	d := decoder{s: v}
	var f rec
	f.m, f.k = d.str(), d.str()
	if d.peek() == 0xc2 {
		d.byte()
		f.relative = true
	} else {
		f.c = d.int()
	}
	f.l, f.e = d.int(), d.int()
	f.t, f.r = d.str(), d.str()
	if d.err == nil && d.s != "" {
		d.err = errors.New("more than seven values")
	}
	if d.err != nil {
		return rec{}, fmt.Errorf("%w: %v", errMalformed, d.err)
	}
	return f, nil
}

// decoder reads MessagePack values from s; the first error sticks.
type decoder struct {
	s   string
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = errors.New(what)
	}
	d.s = ""
}

func (d *decoder) peek() byte {
	if d.s == "" {
		return 0xc1 // never used by MessagePack
	}
	return d.s[0]
}

func (d *decoder) byte() byte {
	x := d.peek()
	if d.s == "" {
		d.fail("truncated")
		return x
	}
	d.s = d.s[1:]
	return x
}

// uint reads an n-byte big-endian unsigned integer.
func (d *decoder) uint(n int) uint64 {
	if len(d.s) < n {
		d.fail("truncated")
		return 0
	}
	var u uint64
	for i := range n {
		u = u<<8 | uint64(d.s[i])
	}
	d.s = d.s[n:]
	return u
}

// str reads a str or bin value.
func (d *decoder) str() string {
	var n int
	switch x := d.byte(); {
	case x&0xe0 == 0xa0:
		n = int(x & 0x1f)
	case x == 0xd9 || x == 0xc4:
		n = int(d.uint(1))
	case x == 0xda || x == 0xc5:
		n = int(d.uint(2))
	case x == 0xdb || x == 0xc6:
		n = int(d.uint(4))
	default:
		d.fail(fmt.Sprintf("type 0x%02x where a string belongs", x))
		return ""
	}
	if len(d.s) < n {
		d.fail("truncated")
		return ""
	}
	s := d.s[:n]
	d.s = d.s[n:]
	return s
}

// int reads an integer, or a double that holds one (cmsgpack packs a Lua number with
// a fraction as a double; the scripts' times have none).
func (d *decoder) int() int64 {
	switch x := d.byte(); {
	case x < 0x80:
		return int64(x)
	case x >= 0xe0:
		return int64(int8(x))
	case x >= 0xcc && x <= 0xcf:
		return int64(d.uint(1 << (x - 0xcc)))
	case x >= 0xd0 && x <= 0xd3:
		n := 1 << (x - 0xd0)
		u := d.uint(n)
		return int64(u<<(64-8*n)) >> (64 - 8*n)
	case x == 0xcb:
		return int64(math.Float64frombits(d.uint(8)))
	case x == 0xca:
		return int64(math.Float32frombits(uint32(d.uint(4))))
	default:
		d.fail(fmt.Sprintf("type 0x%02x where a number belongs", x))
		return 0
	}
}
