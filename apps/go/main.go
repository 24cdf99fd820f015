// Command feed is rttlab's Go feed app: net/http, database/sql and the pgx v5
// stdlib driver, serving the route contract of apps/README.md.
//
// It reads the database address from the libpq environment (PGHOST, PGPORT,
// PGUSER, PGPASSWORD, PGDATABASE) and listens on PORT (default 8080).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// maxSerial is the largest n /serial accepts.
const maxSerial = 1000

// readerName is the account whose feed every /feed request reads.
const readerName = "reader"

// The statements of the routes. Each distinct string is prepared once per
// connection by the driver's default statement cache.
const (
	sqlAccount       = "SELECT id, name FROM accounts WHERE name = $1"
	sqlArticles      = "SELECT id, title FROM articles WHERE account_id = $1 ORDER BY id"
	sqlFeedbackCount = "SELECT article_id, count(*) FROM feedback WHERE article_id = ANY($1) GROUP BY article_id"
	sqlFeedbackOne   = "SELECT count(*) FROM feedback WHERE article_id = $1"
	sqlSerial        = "SELECT 1"
)

type account struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type article struct {
	ID       int64  `json:"id"`
	Title    string `json:"title"`
	Feedback int64  `json:"feedback"`
}

type feedResponse struct {
	Account  account   `json:"account"`
	Articles []article `json:"articles"`
}

type server struct {
	db  *sql.DB
	log *slog.Logger
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("feed stopped", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	addr, err := listenAddr(os.Getenv("PORT"))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	db, err := openDB(log)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := waitForDB(ctx, db, 60*time.Second, log); err != nil {
		return err
	}

	s := &server{db: db, log: log}
	srv := &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("feed listening", "addr", addr)

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	log.Info("feed stopped on signal")
	return nil
}

// listenAddr turns the PORT variable into a listen address.
func listenAddr(port string) (string, error) {
	if port == "" {
		return ":8080", nil
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("PORT %q is not a port number 1-65535", port)
	}
	return net.JoinHostPort("", strconv.Itoa(p)), nil
}

// openDB opens the pool from the libpq environment variables.
//
// The pool holds exactly one connection: the load is one client in a closed
// loop, a request runs its statements one after another, and a single
// long-lived connection keeps the driver's per-connection statement cache
// warm, so after warmup every statement costs one round trip. A second
// connection, opened by some overlapping request, would start with a cold
// cache and add prepare round trips in the middle of a measurement.
// Overlapping requests wait for the connection instead.
func openDB(log *slog.Logger) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig("")
	if err != nil {
		return nil, fmt.Errorf("database settings from PG* environment: %w", err)
	}
	log.Info("database", "host", cfg.Host, "port", cfg.Port, "user", cfg.User, "database", cfg.Database)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// waitForDB pings the database until it answers or limit passes: the
// database container may still be starting when the app starts.
func waitForDB(ctx context.Context, db *sql.DB, limit time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for attempt := 1; ; attempt++ {
		pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
		err := db.PingContext(pingCtx)
		pingCancel()
		if err == nil {
			log.Info("database reachable", "attempts", attempt)
			return nil
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Info("waiting for database", "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("database not reachable within %s: %w", limit, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// handlers maps the contract's paths to their handlers.
func (s *server) handlers() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"/health":     s.health,
		"/feed":       s.feed,
		"/feed-naive": s.feedNaive,
		"/serial":     s.serial,
	}
}

// ServeHTTP routes the contract's paths. Every response is JSON.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := s.handlers()[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	h(w, r)
}

func (s *server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// feed does 3 dependent statements: the reader, the reader's articles, and
// one grouped feedback count over the article ids.
func (s *server) feed(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	resp, err := s.accountAndArticles(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ids := make([]int64, len(resp.Articles))
	for i, a := range resp.Articles {
		ids[i] = a.ID
	}
	counts := make(map[int64]int64, len(ids))
	rows, err := s.db.QueryContext(ctx, sqlFeedbackCount, ids)
	if err != nil {
		s.fail(w, r, fmt.Errorf("count feedback: %w", err))
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			s.fail(w, r, fmt.Errorf("read feedback count: %w", err))
			return
		}
		counts[id] = n
	}
	if err := rows.Err(); err != nil {
		s.fail(w, r, fmt.Errorf("count feedback: %w", err))
		return
	}
	for i := range resp.Articles {
		resp.Articles[i].Feedback = counts[resp.Articles[i].ID]
	}
	writeJSON(w, http.StatusOK, resp)
}

// feedNaive does 12 statements: the reader, the articles, then one feedback
// count per article (the N+1 shape).
func (s *server) feedNaive(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	resp, err := s.accountAndArticles(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i := range resp.Articles {
		a := &resp.Articles[i]
		if err := s.db.QueryRowContext(ctx, sqlFeedbackOne, a.ID).Scan(&a.Feedback); err != nil {
			s.fail(w, r, fmt.Errorf("count feedback of article %d: %w", a.ID, err))
			return
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// accountAndArticles runs the first two statements both feed routes share.
func (s *server) accountAndArticles(ctx context.Context) (*feedResponse, error) {
	var resp feedResponse
	err := s.db.QueryRowContext(ctx, sqlAccount, readerName).Scan(&resp.Account.ID, &resp.Account.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("account %q is missing: is the database seeded?", readerName)
	}
	if err != nil {
		return nil, fmt.Errorf("look up account %q: %w", readerName, err)
	}
	rows, err := s.db.QueryContext(ctx, sqlArticles, resp.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("select articles: %w", err)
	}
	defer rows.Close()
	resp.Articles = []article{}
	for rows.Next() {
		var a article
		if err := rows.Scan(&a.ID, &a.Title); err != nil {
			return nil, fmt.Errorf("read article: %w", err)
		}
		resp.Articles = append(resp.Articles, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("select articles: %w", err)
	}
	return &resp, nil
}

// serial does n sequential SELECT 1.
func (s *server) serial(w http.ResponseWriter, r *http.Request) {
	n, err := parseN(r.URL.Query()["n"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	for i := 0; i < n; i++ {
		var one int
		if err := s.db.QueryRowContext(ctx, sqlSerial).Scan(&one); err != nil {
			s.fail(w, r, fmt.Errorf("statement %d of %d: %w", i+1, n, err))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]int{"n": n})
}

// parseN validates the n query parameter of /serial: exactly one value, a
// decimal integer from 0 to maxSerial.
func parseN(values []string) (int, error) {
	switch len(values) {
	case 0:
		return 0, fmt.Errorf("query parameter n is required (0-%d)", maxSerial)
	case 1:
	default:
		return 0, errors.New("query parameter n is given more than once")
	}
	v := values[0]
	if v == "" {
		return 0, fmt.Errorf("query parameter n is empty: want an integer 0-%d", maxSerial)
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("n=%q is not an integer 0-%d", v, maxSerial)
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > maxSerial {
		return 0, fmt.Errorf("n=%q is out of range 0-%d", v, maxSerial)
	}
	return n, nil
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("request failed", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, err.Error())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encode response"}`)
	}
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
