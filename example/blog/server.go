package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/slotted-go/slotted"
)

type app struct {
	db *gorm.DB
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.home)
	mux.HandleFunc("GET /api/posts", a.list)
	mux.HandleFunc("GET /api/trending", a.trending)
	mux.HandleFunc("GET /api/posts/{id}", a.show)
	mux.HandleFunc("POST /api/posts/{id}/like", a.like)
	mux.HandleFunc("DELETE /api/posts/{id}/like", a.like)
	mux.HandleFunc("POST /api/posts/{id}/view", a.view)
	mux.HandleFunc("POST /api/posts/{id}/comments", a.comment)
	return mux
}

// postJSON is a post as the API shows it.
type postJSON struct {
	ID        uint     `json:"id"`
	Title     string   `json:"title"`
	Likes     int64    `json:"likes"`
	Liked     bool     `json:"liked"` // by ?user=
	Comments  int64    `json:"comments"`
	ViewsWeek int64    `json:"views_week"`
	Sparkline []int64  `json:"sparkline"` // views of the last 7 days, oldest first, today last
	Days      []string `json:"days"`
	Score     float64  `json:"score,omitempty"` // trending only
}

type pageJSON struct {
	Items  []postJSON `json:"items"`
	Totals []int64    `json:"totals,omitempty"`
	Next   string     `json:"next,omitempty"`
	Read   string     `json:"read"`
}

// postID reads the post's id from the path; 0 (no post: the handlers answer
// 404 without a query) when it is not a positive number that fits the id
// column (a BIGINT: PostgreSQL's driver refuses to send an id past MaxInt64,
// an error that is no 404).
func postID(r *http.Request) uint {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 || int64(uint(id)) != id {
		return 0
	}
	return uint(id)
}

// guarded is the handlers' db for counter writes: under MustExist a write
// first looks its post up on the primary (one primary-key SELECT) and
// returns slotted.ErrRecordNotFound, writing nothing, when the post is
// missing. Without it a like of post 999 would succeed and leave an orphan
// counter.
func (a *app) guarded(r *http.Request) *gorm.DB {
	return slotted.MustExist(a.db.WithContext(r.Context()))
}

// writeError answers a failed write: 404 for a missing post, 400 for bad input, else 500.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, slotted.ErrRecordNotFound), errors.Is(err, gorm.ErrRecordNotFound):
		status = http.StatusNotFound
	case errors.Is(err, slotted.ErrInvalidArgument):
		status = http.StatusBadRequest
	}
	http.Error(w, err.Error(), status)
}

// user is the caller: ?user=, a name of 1..64 bytes (a real app takes it from its session).
func user(r *http.Request) (string, error) {
	u := r.URL.Query().Get("user")
	if len(u) > 64 {
		return "", fmt.Errorf("user name longer than 64 bytes")
	}
	return u, nil
}

func (a *app) like(w http.ResponseWriter, r *http.Request) {
	id := postID(r)
	if id == 0 {
		http.NotFound(w, r)
		return
	}
	u, err := user(r)
	if err != nil || u == "" {
		http.Error(w, "?user= is required", http.StatusBadRequest)
		return
	}
	db, p := a.guarded(r), &Post{ID: id}
	var applied bool
	if r.Method == http.MethodDelete {
		applied, err = slotted.RemoveOnce(db, p, "likes", "user:"+u)
	} else {
		// One like per user: the key "user:<name>" is stored with the like, in the same transaction.
		applied, err = slotted.AddOnce(db, p, "likes", 1, "user:"+u)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, map[string]bool{"applied": applied})
}

func (a *app) view(w http.ResponseWriter, r *http.Request) {
	id := postID(r)
	if id == 0 {
		http.NotFound(w, r)
		return
	}
	if err := slotted.Increment(a.guarded(r), &Post{ID: id}, "views"); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// comment creates a comment; the CounterCache moves Post.Comments in the
// INSERT's transaction. MustExist guards the writes that name a model (Add,
// Increment, AddOnce, RemoveOnce, ...), not a child's INSERT, so the post is
// looked up first, as MustExist would: a guard, not a constraint (a post
// deleted in between still gets the comment). Not in one transaction with
// the INSERT: on SQLite a transaction that reads, then writes, fails with
// "database is locked" at once when another writer holds the lock.
func (a *app) comment(w http.ResponseWriter, r *http.Request) {
	id := postID(r)
	if id == 0 {
		http.NotFound(w, r)
		return
	}
	db := a.db.WithContext(r.Context())
	if err := slotted.WithoutFill(db).Select("id").First(&Post{}, id).Error; err != nil {
		writeError(w, err)
		return
	}
	c := Comment{PostID: id, Body: r.URL.Query().Get("body")}
	if err := db.Create(&c).Error; err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, map[string]uint{"id": c.ID})
}

// show: GET /api/posts/{id}?user=ann. A read, so a plain First answers
// 404 (gorm.ErrRecordNotFound); auto-fill reads its counters.
func (a *app) show(w http.ResponseWriter, r *http.Request) {
	id := postID(r)
	if id == 0 {
		http.NotFound(w, r)
		return
	}
	u, err := user(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var p Post
	if err := a.db.WithContext(r.Context()).First(&p, id).Error; err != nil {
		writeError(w, err)
		return
	}
	out, err := a.describe(r, []Post{p}, u)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, out[0])
}

// list: GET /api/posts?limit=10&after=<cursor>|offset=20&read=exact|fast&user=ann, sorted by likes.
func (a *app) list(w http.ResponseWriter, r *http.Request) {
	page, err := a.listPage(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, page)
}

func (a *app) listPage(r *http.Request) (*pageJSON, error) {
	q := r.URL.Query()
	opts := slotted.ListOptions{Limit: atoi(q.Get("limit"), 10), Offset: atoi(q.Get("offset"), 0), After: q.Get("after")}
	switch q.Get("read") {
	case "exact":
		opts.Read = slotted.ReadExact
	case "fast":
		opts.Read = slotted.ReadFast // the likes_count column: as fresh as the Runner's last roll-up
	}
	u, err := user(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", slotted.ErrInvalidArgument, err)
	}
	page, err := slotted.List(a.db.WithContext(r.Context()), &Post{}, "likes", opts)
	if err != nil {
		return nil, err
	}
	items, err := a.describe(r, page.Items, u)
	if err != nil {
		return nil, err
	}
	return &pageJSON{Items: items, Totals: page.Totals, Next: page.Next, Read: page.Read.String()}, nil
}

// trending: GET /api/trending?limit=10&after=<cursor>: views of the last 7 days, each day weighing half the next.
func (a *app) trending(w http.ResponseWriter, r *http.Request) {
	page, err := a.trendingPage(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, page)
}

func (a *app) trendingPage(r *http.Request) (*pageJSON, error) {
	q := r.URL.Query()
	u, err := user(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", slotted.ErrInvalidArgument, err)
	}
	page, err := slotted.Trending(a.db.WithContext(r.Context()), &Post{}, "views",
		slotted.TrendOptions{Buckets: days, HalfLife: halfLife, Limit: atoi(q.Get("limit"), 10), Offset: atoi(q.Get("offset"), 0), After: q.Get("after")})
	if err != nil {
		return nil, err
	}
	items, err := a.describe(r, page.Items, u)
	if err != nil {
		return nil, err
	}
	for i := range items {
		items[i].Score = page.Scores[i]
	}
	return &pageJSON{Items: items, Next: page.Next, Read: page.Read.String()}, nil
}

// describe turns posts (counters filled by auto-fill) into their JSON, with
// the week's sparkline and whether user liked each: two statements for the
// whole page, whatever its length.
func (a *app) describe(r *http.Request, posts []Post, user string) ([]postJSON, error) {
	db := a.db.WithContext(r.Context())
	liked, err := likedBy(db, posts, user)
	if err != nil {
		return nil, err
	}
	// LastDays(7): the 7 day buckets ending with today's, resolved at
	// Config.Now in the counter's zone (UTC here), so no day arithmetic here,
	// and -check's clock is the one that decides which day is today. One
	// statement reads the series of every post of the page.
	series, err := slotted.SeriesMany(db, &posts, "views", slotted.LastDays(days))
	if err != nil {
		return nil, err
	}
	out := make([]postJSON, len(posts))
	for i, p := range posts {
		j := postJSON{ID: p.ID, Title: p.Title, Likes: p.Likes, Comments: p.Comments, Liked: liked[i]}
		for _, b := range series[i] {
			j.Sparkline = append(j.Sparkline, b.Count)
			j.Days = append(j.Days, b.Start.Format("01-02"))
			j.ViewsWeek += b.Count
		}
		out[i] = j
	}
	return out, nil
}

// likedBy returns, for each of posts in order, whether user has liked it:
// whether AddOnce applied the key "user:<name>" to its likes (and no
// RemoveOnce took it back). One statement for the page.
func likedBy(db *gorm.DB, posts []Post, user string) ([]bool, error) {
	if user == "" || len(posts) == 0 {
		return make([]bool, len(posts)), nil
	}
	return slotted.AppliedMany(db, &posts, "likes", "user:"+user)
}

func atoi(s string, def int) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1 // refused by the library as ErrInvalidArgument
	}
	return n
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// home is the HTML page: the listing by likes (cursor pages) and this week's trending posts, with sparklines.
func (a *app) home(w http.ResponseWriter, r *http.Request) {
	list, err := a.listPage(r)
	if err != nil {
		writeError(w, err)
		return
	}
	r.URL.RawQuery = "limit=5"
	trend, err := a.trendingPage(r)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = homeTmpl.Execute(w, map[string]any{"List": list, "Trending": trend})
}

var homeTmpl = template.Must(template.New("home").Funcs(template.FuncMap{"spark": spark}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>slotted blog</title>
<style>body{font:15px system-ui;margin:2em;max-width:46em}td{padding:.2em .8em}svg{vertical-align:middle}.n{text-align:right}</style></head>
<body><h1>slotted blog</h1>
<h2>Trending this week</h2>
<table>{{range .Trending.Items}}<tr><td>{{.Title}}</td><td class="n">{{printf "%.1f" .Score}}</td><td>{{spark .Sparkline}}</td><td class="n">{{.ViewsWeek}} views</td></tr>{{end}}</table>
<h2>Most liked ({{.List.Read}})</h2>
<table><tr><th>post</th><th>likes</th><th>comments</th><th colspan="2">views, last 7 days</th></tr>
{{range .List.Items}}<tr><td>{{.Title}}</td><td class="n">{{.Likes}}{{if .Liked}} ♥{{end}}</td><td class="n">{{.Comments}}</td><td>{{spark .Sparkline}}</td><td class="n">{{.ViewsWeek}}</td></tr>{{end}}
</table>
{{with .List.Next}}<p><a href="/?after={{.}}">next page</a></p>{{end}}
</body></html>`))

// spark draws counts as an inline SVG polyline, 7 points over 70×20 pixels.
func spark(counts []int64) template.HTML {
	var top int64 = 1
	for _, c := range counts {
		top = max(top, c)
	}
	pts := make([]string, len(counts))
	for i, c := range counts {
		pts[i] = fmt.Sprintf("%d,%.1f", i*10+2, 18-16*float64(c)/float64(top))
	}
	return template.HTML(`<svg width="66" height="20" viewBox="0 0 66 20"><polyline fill="none" stroke="#c33" stroke-width="1.5" points="` +
		strings.Join(pts, " ") + `"/></svg>`)
}
