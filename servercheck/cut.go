package servercheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"time"
)

// How cutSend loses the send.
type cutMode int

const (
	cutAfterRequest cutMode = iota // the whole request written, the answer never read
	cutMidBody                     // half the body written
)

// cutSend sends s on a connection of its own and closes the connection: after the
// whole request (the answer is lost), or in the middle of the body.
func (c *client) cutSend(ctx context.Context, s send, mode cutMode) *answer {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, reqID, err := c.request(ctx, s)
	a := &answer{reqID: reqID, ex: &Exchange{}}
	if err != nil {
		a.err = err
		return a
	}
	a.ex.Request = requestText(req)
	if err := c.take(); err != nil {
		a.err = err
		a.ex.Response = "(not sent: " + err.Error() + ")"
		return a
	}
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		a.err = err
		return a
	}
	raw := wire.Bytes()
	how := "closed the connection right after writing the whole request, without reading the answer"
	if mode == cutMidBody {
		raw = raw[:len(raw)-int(req.ContentLength)/2]
		how = "closed the connection after writing half the body"
	}
	conn, err := dial(ctx, req.URL)
	if err != nil {
		a.err = err
		a.ex.Response = "(no connection: " + err.Error() + ")"
		return a
	}
	_, err = conn.Write(raw)
	if err == nil && mode == cutAfterRequest {
		// Long enough for the server to read the request and start on it.
		time.Sleep(20 * time.Millisecond)
	}
	conn.Close()
	if err != nil {
		a.err = err
		a.ex.Response = "(write failed: " + err.Error() + ")"
		return a
	}
	a.ex.Response = "(the checker " + how + ")"
	return a
}

// dial opens a connection to the host of u, with TLS for https.
func dial(ctx context.Context, u *url.URL) (net.Conn, error) {
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host += ":443"
		} else {
			host += ":80"
		}
	}
	if u.Scheme == "https" {
		d := &tls.Dialer{Config: &tls.Config{ServerName: u.Hostname()}}
		return d.DialContext(ctx, "tcp", host)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", host)
}

// cutBody: a send cut off in its body never reached the server whole, so it holds
// no key: the identical retry runs as a first send.
func (s *session) cutBody(ctx context.Context) Result {
	snd := s.newSend("cut-request")
	cutA := s.c.cutSend(ctx, snd, cutMidBody)
	if cutA.err != nil {
		return notChecked(cutA, "the cut send failed")
	}
	answers := s.untilProduced(ctx, snd, 4)
	last := answers[len(answers)-1]
	s.learn(last)
	switch {
	case last.err != nil:
		return notChecked(last, "the retry got no answer")
	case inFlight(last):
		return fail(fmt.Sprintf("%d retries of a send whose first attempt was cut off in its body got 409: the cut send holds the key, but a send the server never received whole must hold none",
			len(answers)), cutA.ex, last.ex)
	case !produced(last):
		return fail("the retry of a send whose first attempt was cut off in its body got "+last.describe()+", want the task or Message of a first send", cutA.ex, last.ex)
	}
	s.first(last)
	return pass("the retry ran as a first send: " + product(last))
}

// lostAnswer: the checker writes a whole keyed send and closes the connection
// without reading the answer, then retries: every retry names one task.
func (s *session) lostAnswer(ctx context.Context) Result {
	snd := s.newSend("lost-answer")
	lost := s.c.cutSend(ctx, snd, cutAfterRequest)
	if lost.err != nil {
		return notChecked(lost, "the first attempt could not be sent")
	}
	exs := []*Exchange{lost.ex}
	answers := s.untilProduced(ctx, snd, s.triesFor())
	conflicts := len(answers) - 1
	a := answers[len(answers)-1]
	exs = append(exs, a.ex)
	switch {
	case a.err != nil:
		return notChecked(a, "the retry got no answer")
	case inFlight(a):
		return fail(fmt.Sprintf("%d retries after the lost answer all got 409: the key stayed in flight past the checker's wait (%v of agent delay hinted)",
			len(answers), s.c.opts.AgentDelay), exs...)
	case !produced(a):
		return fail("the retry after the lost answer got "+a.describe()+", want the first attempt's task or Message", exs...)
	}
	s.learn(a)
	// Two more retries, which come after the task was answered: replays for sure.
	for i := 0; i < 2; i++ {
		b := s.do(ctx, snd, nil)
		exs = append(exs, b.ex)
		switch {
		case b.err != nil:
			return notChecked(b, "a later retry got no answer")
		case !produced(b):
			return fail(fmt.Sprintf("retry %d after the lost answer got %s, an earlier one %s", i+2, b.describe(), product(a)), exs...)
		case !sameProduct(a, b):
			return fail(fmt.Sprintf("retries after the lost answer name two products, %s and %s: the send ran twice", product(a), product(b)), exs...)
		}
		s.replayed(b)
	}
	detail := fmt.Sprintf("3 retries name %s", product(a))
	if conflicts > 0 {
		detail += fmt.Sprintf(" (after %d answers 409 with Retry-After while the first attempt was in flight)", conflicts)
	}
	return pass(detail + "; one run inferred from task identity (only the server can count its runs)")
}
