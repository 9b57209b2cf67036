package backup

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/datadir"
	"github.com/idemgate/idemgate/fsm"
)

// Config names the stopped node an offline operation works on.
type Config struct {
	// NodeID is the node's id in the cluster file.
	NodeID string
	// DataDir is the node's data directory.
	DataDir string
	// FSMNoSync is the node's own setting (raftstore.Config.FSMNoSync):
	// it decides how a state machine file left by an unclean stop is
	// checked when it is opened (fsm.Config.NoSync).
	FSMNoSync bool
	// LogStore is the node's own raft.log_store (raftstore.Config.LogStore):
	// the store Restore writes the log into, and the one Recover expects
	// to find. Empty: the store the data directory holds, or
	// datadir.DefaultLogStore for a new one.
	LogStore string
	// Logger receives the state machine's lines (a file moved aside after
	// an unclean stop, say). Nil: they are dropped.
	Logger *slog.Logger
}

// Validate checks the config and names the field at fault.
func (c Config) Validate() error {
	if c.NodeID == "" {
		return errors.New("backup: NodeID is empty")
	}
	if c.DataDir == "" {
		return errors.New("backup: DataDir is empty")
	}
	if c.LogStore != "" && !slices.Contains(datadir.LogStores, c.LogStore) {
		return fmt.Errorf("backup: LogStore %q: want one of %s", c.LogStore, strings.Join(datadir.LogStores, ", "))
	}
	return nil
}

// Voter is one voter of the cluster Restore or Recover makes.
type Voter struct {
	ID       string
	RaftAddr string
}

// configuration is voters as a Raft configuration; an error names the
// voter at fault.
func configuration(voters []Voter) (raft.Configuration, error) {
	var conf raft.Configuration
	seen := map[string]bool{}
	for i, v := range voters {
		if v.ID == "" || v.RaftAddr == "" {
			return raft.Configuration{}, fmt.Errorf("backup: voters[%d]: id and raft address are required", i)
		}
		if seen[v.ID] {
			return raft.Configuration{}, fmt.Errorf("backup: voters[%d]: duplicate id %q", i, v.ID)
		}
		seen[v.ID] = true
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(v.ID), Address: raft.ServerAddress(v.RaftAddr), Suffrage: raft.Voter})
	}
	return conf, nil
}

// openFSM opens the node's state machine file as the node does.
func (c Config) openFSM() (*fsm.FSM, error) {
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return fsm.Open(fsm.Config{Path: filepath.Join(c.DataDir, "fsm.db"), NoSync: c.FSMNoSync, Logger: logger})
}

// inmemTransport is the transport a snapshot is created with: hashicorp/raft
// encodes the voters' addresses into the snapshot's metadata through it.
// Nothing is sent, and its own address is written nowhere.
func inmemTransport() (raft.ServerAddress, *raft.InmemTransport) {
	return raft.NewInmemTransport("")
}
