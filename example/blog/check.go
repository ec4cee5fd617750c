package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// checker drives the server over HTTP and keeps its own tally.
type checker struct {
	base       string
	http       *http.Client
	posts      []uint
	requests   atomic.Int64
	mu         sync.Mutex
	mismatches []string
	// The tally, by post index.
	views    [][]int64 // [post][age in days]: 0 today .. 9
	likes    []int64
	comments []int64
	liked    map[[2]int]bool // (user, post) liked at the end
}

func (c *checker) failf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mismatches) < 20 {
		c.mismatches = append(c.mismatches, fmt.Sprintf(format, args...))
	} else if len(c.mismatches) == 20 {
		c.mismatches = append(c.mismatches, "...")
	}
}

// do sends one request and decodes its JSON answer into out (when non-nil); it returns the status.
func (c *checker) do(method, path string, q url.Values, out any) int {
	c.requests.Add(1)
	req, _ := http.NewRequest(method, c.base+path+"?"+q.Encode(), nil)
	resp, err := c.http.Do(req)
	if err != nil {
		c.failf("%s %s: %v", method, path, err)
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return resp.StatusCode
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			c.failf("%s %s: %v in %q", method, path, err, body)
		}
	}
	return resp.StatusCode
}

func runCheck(base string, clk *clock, posts []Post, clients, users int) error {
	start := time.Now()
	users = max(users, clients)
	c := &checker{
		base:  base,
		http:  &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}},
		liked: map[[2]int]bool{},
		views: make([][]int64, len(posts)), likes: make([]int64, len(posts)), comments: make([]int64, len(posts)),
	}
	for i, p := range posts {
		c.posts = append(c.posts, p.ID)
		c.views[i] = make([]int64, 10)
	}
	y, m, d := time.Now().UTC().Date()
	noon := time.Date(y, m, d, 12, 0, 0, 0, time.UTC)

	// Views, a day at a time from 9 days ago (days 7..9 are older than the week), concurrent within each day.
	for age := 9; age >= 0; age-- {
		clk.Set(noon.AddDate(0, 0, -age))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range clients {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(age), uint64(w)))
				for range 4 + rng.IntN(4) {
					i := min(rng.IntN(len(posts)), rng.IntN(len(posts))) // low ids get more
					if st := c.do("POST", fmt.Sprintf("/api/posts/%d/view", c.posts[i]), nil, nil); st == http.StatusNoContent {
						mu.Lock()
						c.views[i][age]++
						mu.Unlock()
					} else {
						c.failf("view of post %d: status %d", c.posts[i], st)
					}
				}
			})
		}
		wg.Wait()
	}
	clk.Set(noon)

	// Likes, unlikes and comments, concurrently; each user belongs to one client, so a user's
	// likes are sent in order and the tally knows whether each one should apply.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(99, uint64(w)))
			liked := map[[2]int]bool{}
			for range 40 {
				u := w + clients*rng.IntN((users-w+clients-1)/clients) // users >= clients: every client owns one at least
				i := rng.IntN(len(posts))
				q := url.Values{"user": {fmt.Sprintf("user%d", u)}}
				path := fmt.Sprintf("/api/posts/%d", c.posts[i])
				switch k := rng.IntN(10); {
				case k < 8: // like (6 in 10), or unlike
					method, want := "POST", !liked[[2]int{u, i}]
					if k >= 6 {
						method, want = "DELETE", liked[[2]int{u, i}]
					}
					var got struct{ Applied bool }
					if st := c.do(method, path+"/like", q, &got); st != http.StatusOK {
						c.failf("%s like: status %d", method, st)
						continue
					}
					if got.Applied != want {
						c.failf("%s like of post %d by user%d: applied %v, want %v", method, c.posts[i], u, got.Applied, want)
					}
					if got.Applied {
						liked[[2]int{u, i}] = method == "POST"
						mu.Lock()
						c.likes[i] += map[bool]int64{true: 1, false: -1}[method == "POST"]
						mu.Unlock()
					}
				default:
					if st := c.do("POST", path+"/comments", url.Values{"body": {"hello"}}, nil); st != http.StatusOK {
						c.failf("comment: status %d", st)
						continue
					}
					mu.Lock()
					c.comments[i]++
					mu.Unlock()
				}
			}
			mu.Lock()
			for k, v := range liked {
				c.liked[k] = v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	// Writes to a missing post (MustExist) and reads of one answer 404.
	for _, req := range []struct{ method, path string }{
		{"POST", "/api/posts/999999/view"}, {"POST", "/api/posts/999999/like"}, {"DELETE", "/api/posts/999999/like"},
		{"POST", "/api/posts/999999/comments"}, {"GET", "/api/posts/999999"}, {"POST", "/api/posts/x/view"},
		{"POST", "/api/posts/9223372036854775808/like"}, // past the BIGINT id column
	} {
		if st := c.do(req.method, req.path, url.Values{"user": {"user0"}}, nil); st != http.StatusNotFound {
			c.failf("%s %s (a missing post): status %d, want 404", req.method, req.path, st)
		}
	}
	writes := c.requests.Load()

	// Every figure, read back.
	who := url.Values{"user": {"user0"}}
	likedBy0 := map[uint]bool{}
	for k, v := range c.liked {
		if k[0] == 0 && v {
			likedBy0[c.posts[k[1]]] = true
		}
	}
	for i, id := range c.posts {
		var p postJSON
		c.do("GET", fmt.Sprintf("/api/posts/%d", id), who, &p)
		c.checkPost("post page", i, p, likedBy0)
	}
	want := slices.Clone(c.posts)
	idx := map[uint]int{}
	for i, id := range c.posts {
		idx[id] = i
	}
	slices.SortFunc(want, func(a, b uint) int { return cmp.Or(cmp.Compare(c.likes[idx[b]], c.likes[idx[a]]), cmp.Compare(b, a)) })
	got := c.walk("/api/posts", url.Values{"read": {"exact"}, "limit": {"5"}, "user": {"user0"}}, true, func(p postJSON, total int64) {
		c.checkPost("exact listing", idx[p.ID], p, likedBy0)
		if total != c.likes[idx[p.ID]] {
			c.failf("exact listing: post %d sorted by %d, has %d likes", p.ID, total, c.likes[idx[p.ID]])
		}
	})
	if !slices.Equal(got, want) {
		c.failf("exact listing order %v, want %v", got, want)
	}
	// The fast listing sorts by likes_count: wait for the Runner's roll-up, then page by offset.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var page pageJSON
		c.do("GET", "/api/posts", url.Values{"read": {"fast"}, "limit": {"1000"}}, &page)
		ok := len(page.Items) == len(c.posts)
		for k, p := range page.Items {
			ok = ok && page.Totals[k] == c.likes[idx[p.ID]]
		}
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	got = c.walk("/api/posts", url.Values{"read": {"fast"}, "limit": {"5"}, "user": {"user0"}}, false, func(p postJSON, total int64) {
		c.checkPost("fast listing", idx[p.ID], p, likedBy0)
		if total != c.likes[idx[p.ID]] {
			c.failf("fast listing: post %d sorted by %d, has %d likes (roll-up not done within 15 s?)", p.ID, total, c.likes[idx[p.ID]])
		}
	})
	if !slices.Equal(got, want) {
		c.failf("fast listing order %v, want %v", got, want)
	}
	// Trending: Σ views × 0.5^age over the 7 days, highest first.
	score := func(i int) float64 {
		s := 0.0
		for age := range days {
			s += float64(c.views[i][age]) * math.Pow(0.5, float64(age)/halfLife)
		}
		return s
	}
	var scores []float64
	got = c.walk("/api/trending", url.Values{"limit": {"4"}, "user": {"user0"}}, true, func(p postJSON, _ int64) {
		c.checkPost("trending", idx[p.ID], p, likedBy0)
		if math.Abs(p.Score-score(idx[p.ID])) > 1e-4 {
			c.failf("trending: post %d score %v, want %v", p.ID, p.Score, score(idx[p.ID]))
		}
		scores = append(scores, p.Score)
	})
	if !slices.Equal(slices.Sorted(slices.Values(got)), c.posts) {
		c.failf("trending lists %v, want every post once", got)
	}
	for k := 1; k < len(scores); k++ {
		if scores[k] > scores[k-1] {
			c.failf("trending: score %v after %v", scores[k], scores[k-1])
		}
	}
	// The HTML page: the trending list and the listing, with their sparklines.
	c.requests.Add(1)
	if resp, err := c.http.Get(c.base + "/"); err != nil {
		c.failf("GET /: %v", err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Count(string(body), "<svg") != min(5, len(c.posts))+min(10, len(c.posts)) {
			c.failf("GET /: status %d, %d sparklines", resp.StatusCode, strings.Count(string(body), "<svg"))
		}
	}
	var views, likes, comments int64
	for i := range c.posts {
		likes, comments = likes+c.likes[i], comments+c.comments[i]
		for _, v := range c.views[i] {
			views += v
		}
	}
	fmt.Printf("check: %d writes (%d views, %d likes net, %d comments) by %d clients, %d requests in all, %v\n",
		writes, views, likes, comments, clients, c.requests.Load(), time.Since(start).Round(time.Millisecond))
	if len(c.mismatches) > 0 {
		for _, m := range c.mismatches {
			fmt.Println("MISMATCH", m)
		}
		return fmt.Errorf("check failed: %d mismatches", len(c.mismatches))
	}
	fmt.Println("check: every figure matches the tally (post pages, exact and fast listings, trending, the HTML page)")
	return nil
}

// walk pages through a listing (cursor, or offset when cursor is false) and returns the ids in order.
func (c *checker) walk(path string, q url.Values, cursor bool, each func(postJSON, int64)) []uint {
	var ids []uint
	limit := 5
	fmt.Sscan(q.Get("limit"), &limit)
	for pages := 0; pages < 100; pages++ {
		var page pageJSON
		if st := c.do("GET", path, q, &page); st != http.StatusOK {
			c.failf("GET %s: status %d", path, st)
			return ids
		}
		for k, p := range page.Items {
			ids = append(ids, p.ID)
			var total int64
			if k < len(page.Totals) {
				total = page.Totals[k]
			}
			each(p, total)
		}
		if cursor {
			if page.Next == "" {
				return ids
			}
			q.Set("after", page.Next)
		} else {
			if len(page.Items) < limit {
				return ids
			}
			q.Set("offset", fmt.Sprint(len(ids)))
		}
	}
	c.failf("%s did not end", path)
	return ids
}

func (c *checker) checkPost(where string, i int, p postJSON, liked map[uint]bool) {
	id := c.posts[i]
	if p.ID != id {
		c.failf("%s: post %d answered for %d", where, p.ID, id)
		return
	}
	if p.Likes != c.likes[i] || p.Comments != c.comments[i] {
		c.failf("%s: post %d has %d likes, %d comments; want %d, %d", where, id, p.Likes, p.Comments, c.likes[i], c.comments[i])
	}
	if liked != nil && p.Liked != liked[id] {
		c.failf("%s: post %d liked by user0 %v, want %v", where, id, p.Liked, liked[id])
	}
	var week int64
	for age := range days {
		week += c.views[i][age]
		if len(p.Sparkline) != days || p.Sparkline[days-1-age] != c.views[i][age] {
			c.failf("%s: post %d sparkline %v, want %d views %d days ago", where, id, p.Sparkline, c.views[i][age], age)
			break
		}
	}
	if p.ViewsWeek != week {
		c.failf("%s: post %d views this week %d, want %d", where, id, p.ViewsWeek, week)
	}
}
