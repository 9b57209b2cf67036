package raftstore

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgate/idemgate/raftstore/transport"
)

// Pub/Sub fan-out (the transport package has the protocol): a message
// published on this node goes to every other member over one long-lived
// link per peer, and a message a peer publishes is handed to the Redis
// listener (OnBroadcast). Never through Raft: a message is not stored, and
// reaches each node at most once, as Redis Cluster's bus carries PUBLISH.
//
// Why a link of its own on the Raft port rather than the forwarding
// connection or the log: forwarding goes to the leader only and pairs each
// request with an answer; the log would store each message and make every
// PUBLISH a commit (a disk write on two nodes). A link is one-way, batches
// what queued while the previous frame was written into one frame, and is
// admitted as Raft is (membership, cluster id, mutual TLS).

// fanoutRefresh is how often Broadcast looks at the members again: a node
// added gets messages within it, a node removed stops getting them.
const fanoutRefresh = 250 * time.Millisecond

// fanout is the node's links to its peers.
type fanout struct {
	s       *Store
	deliver atomic.Pointer[func(shard bool, channel, message []byte)]
	next    atomic.Int64 // unix ns: when the links are next compared with the members
	cur     atomic.Pointer[[]*transport.Link]

	mu     sync.Mutex
	links  map[string]*transport.Link // by node id
	addrs  map[string]string          // by node id: its raft address, as last read
	closed bool
	// inbound are the peers' links to this node, being read.
	inbound map[net.Conn]struct{}
	// sentGone and droppedGone are the counts of links closed since:
	// the counters never go down when a member leaves.
	sentGone, droppedGone int64
}

func newFanout(s *Store) *fanout {
	return &fanout{s: s, links: map[string]*transport.Link{}, addrs: map[string]string{}, inbound: map[net.Conn]struct{}{}}
}

// Broadcast sends a published message to every other member; it never
// waits for one (resp.Broadcaster).
func (s *Store) Broadcast(shard bool, channel, message []byte) {
	f := s.fan
	if now := time.Now().UnixNano(); now >= f.next.Load() {
		f.next.Store(now + int64(fanoutRefresh))
		f.refresh()
	}
	if links := f.cur.Load(); links != nil {
		for _, l := range *links {
			l.Send(shard, channel, message)
		}
	}
}

// OnBroadcast registers what receives the messages other nodes publish
// (resp.Broadcaster): the Redis listener's delivery.
func (s *Store) OnBroadcast(fn func(shard bool, channel, message []byte)) { s.fan.deliver.Store(&fn) }

// refresh makes the links those of the current members but this node.
func (f *fanout) refresh() {
	members := f.s.members.list()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || members == nil {
		return
	}
	for id, l := range f.links {
		if _, ok := members[id]; !ok || id == f.s.cfg.NodeID {
			delete(f.links, id)
			delete(f.addrs, id)
			f.sentGone += l.Sent.Load()
			f.droppedGone += l.Dropped.Load()
			go l.Close()
		}
	}
	links := make([]*transport.Link, 0, len(members))
	for id, addr := range members {
		if id == f.s.cfg.NodeID {
			continue
		}
		f.addrs[id] = addr
		l := f.links[id]
		if l == nil {
			l = transport.NewLink(func() transport.Peer { return f.s.peer(id, f.addr(id), f.s.cfg.DialTimeout) }, f.s.maxFrame())
			f.links[id] = l
		}
		links = append(links, l)
	}
	f.cur.Store(&links)
}

func (f *fanout) addr(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addrs[id]
}

// close stops every link.
func (f *fanout) close() {
	f.mu.Lock()
	f.closed = true
	links := f.links
	f.links = nil
	f.cur.Store(nil)
	f.mu.Unlock()
	for _, l := range links {
		l.Close()
	}
}

// servePubSub reads one peer's Pub/Sub link, once the store has started;
// Close closes it and waits for it.
func (s *Store) servePubSub(conn net.Conn) { s.serveInbound(conn, s.readLink) }

// readLink hands what a peer's link carries to the listener until it ends.
func (s *Store) readLink(conn net.Conn) {
	s.fan.mu.Lock()
	s.fan.inbound[conn] = struct{}{}
	s.fan.mu.Unlock()
	defer func() {
		s.fan.mu.Lock()
		delete(s.fan.inbound, conn)
		s.fan.mu.Unlock()
	}()
	transport.ServePubSub(conn, s.maxFrame(), func(shard bool, channel, message []byte) {
		if fn := s.fan.deliver.Load(); fn != nil {
			(*fn)(shard, channel, message)
		}
	})
}

// pubSubCounts are the messages this node's links wrote and lost, all
// peers together (idemgate_pubsub_messages_total).
func (s *Store) pubSubCounts() (sent, dropped int64) {
	s.fan.mu.Lock()
	defer s.fan.mu.Unlock()
	sent, dropped = s.fan.sentGone, s.fan.droppedGone
	for _, l := range s.fan.links {
		sent += l.Sent.Load()
		dropped += l.Dropped.Load()
	}
	return sent, dropped
}

// dropInbound closes the peers' links to this node (tests: a link broken
// mid-stream); the number closed.
func (f *fanout) dropInbound() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.inbound {
		c.Close()
	}
	return len(f.inbound)
}
