package exampleserver

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/sqlstore"
)

// Server is what both examples build before they route requests: the flags they were
// started with, a logger, the key index, the a2a-go request handler running the agent
// behind the kit's adapter, and a listener.
type Server struct {
	Config  Config
	Logger  *slog.Logger
	Index   *sqlstore.Store
	Handler a2asrv.RequestHandler
	// Base is the URL clients reach the listener at.
	Base string

	ln         net.Listener
	closeIndex func() error
}

// Open parses args as the flags of the example called name, opens the key index
// they name and listens on their address. Logs go to stderr. Close the Server when
// Serve has returned, or when the example gives up before serving.
func Open(ctx context.Context, name string, args []string, stderr io.Writer) (*Server, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &Server{Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	s.Config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	agent, err := s.Config.Agent()
	if err != nil {
		return nil, err
	}
	s.Index, s.closeIndex, err = OpenIndex(ctx, s.Config.Store, s.Config.Table)
	if err != nil {
		return nil, err
	}
	s.ln, s.Base, err = Listen(s.Config.Addr)
	if err != nil {
		s.closeIndex()
		return nil, err
	}
	s.Handler = NewRequestHandler(agent, s.Logger)
	return s, nil
}

// Close closes the listener (if Serve did not) and the key index.
func (s *Server) Close() error {
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return errors.Join(err, s.closeIndex())
}
