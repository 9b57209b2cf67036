package raftstore

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
)

// The Raft port's wire as an outsider writes it: the protocol bytes of the
// preamble, a forwarding frame's layout and the error status, spelled out
// here (the transport package keeps its own unexported), so these attacks
// notice a change of the format.
const (
	wireRaft        byte = 'R'
	wireForward     byte = 'F'
	wireStatusError byte = 3
	wireHeaderLen        = 13 // tag (1) | seq (8) | len (4)
)

// dialPeer opens a connection to a Raft port as any dialler can: TLS with
// cfg (nil: plaintext), then the preamble for proto and cluster.
func dialPeer(addr string, timeout time.Duration, proto byte, cluster command.ClusterID, cfg *tls.Config) (net.Conn, error) {
	var c net.Conn
	var err error
	if cfg != nil {
		c, err = dialProtoRaw(addr, cfg)
	} else {
		c, err = net.DialTimeout("tcp", addr, timeout)
	}
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(append([]byte{proto}, cluster[:]...)); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// frameHeader is a forwarding frame's header: tag, seq 1, and a payload
// length n (which the bytes after it may belie).
func frameHeader(kind transport.Kind, n uint32) []byte {
	b := binary.BigEndian.AppendUint64([]byte{byte(kind)}, 1)
	return binary.BigEndian.AppendUint32(b, n)
}

// forwardFrame is a forwarding request as a follower sends it (seq 1).
func forwardFrame(kind transport.Kind, payload []byte) []byte {
	return append(frameHeader(kind, uint32(len(payload))), payload...)
}

// readAnswer reads one answer frame (of at most 1 MiB): its status and
// payload.
func readAnswer(r io.Reader) (status byte, payload []byte, err error) {
	var hdr [wireHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	payload = make([]byte, min(binary.BigEndian.Uint32(hdr[9:]), 1<<20))
	_, err = io.ReadFull(r, payload)
	return hdr[0], payload, err
}
