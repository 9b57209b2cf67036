package resp

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// clientList is CLIENT LIST [TYPE type] [ID id …]: a line for each of
// this node's connections, in id order (with ID, in the order given), as Redis 7.0 writes them but with
// the fields another connection's goroutine may read: id, addr, laddr,
// name, age, user, lib-name, lib-ver (BullMQ's Queue.getWorkers finds its
// workers by name). A node lists its own clients, as each node of a Redis
// Cluster does. TYPE normal lists them all (subscribers too); master and
// replica none, as Redis lists no replication links to a client; pubsub
// is not told apart (ERR).
func (c *conn) clientList(a [][]byte) {
	var ids []int64
	byID := false
	switch {
	case len(a) == 0:
	case len(a) == 2 && eq(string(a[0]), "type"):
		switch t := strings.ToLower(string(a[1])); t {
		case "normal":
		case "master", "replica", "slave":
			c.w.verbatim("")
			return
		case "pubsub":
			c.w.errorLine("ERR CLIENT LIST TYPE pubsub is not supported by idemgate: subscribers are listed with TYPE normal")
			return
		default:
			c.w.errorLine(fmt.Sprintf("ERR Unknown client type '%s'", clip(a[1])))
			return
		}
	case len(a) >= 2 && eq(string(a[0]), "id"):
		byID = true
		for _, v := range a[1:] {
			id, ok := parseInt64(v)
			if !ok {
				c.w.errorLine("ERR Invalid client ID")
				return
			}
			ids = append(ids, id)
		}
	default:
		c.w.errorLine(msgSyntax)
		return
	}
	var conns []*conn
	c.s.mu.Lock()
	if byID {
		for _, id := range ids { // in the order given, as Redis lists them
			if o := c.s.ids[id]; o != nil {
				conns = append(conns, o)
			}
		}
	} else {
		for o := range c.s.conns {
			conns = append(conns, o)
		}
	}
	c.s.mu.Unlock()
	if !byID {
		slices.SortFunc(conns, func(x, y *conn) int { return cmp.Compare(x.id, y.id) })
	}
	var b strings.Builder
	for _, o := range conns {
		user := "default"
		if sess := o.sess.Load(); sess != nil {
			user = sess.grant.Name
		}
		n := o.named()
		fmt.Fprintf(&b, "id=%d addr=%s laddr=%s name=%s age=%d user=%s lib-name=%s lib-ver=%s\n",
			o.id, o.nc.RemoteAddr(), o.nc.LocalAddr(), n.name, int(time.Since(o.created).Seconds()), user, n.libName, n.libVer)
	}
	c.w.verbatim(b.String())
}
