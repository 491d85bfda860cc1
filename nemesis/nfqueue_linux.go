//go:build linux

package nemesis

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"time"
)

// The nfnetlink_queue protocol, from linux/netfilter/nfnetlink_queue.h.
const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgVerdict   = 1
	nfqnlMsgConfig    = 2
	nfqaPacketHdr     = 1
	nfqaVerdictHdr    = 2
	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqaCfgQueueMaxln = 3
	nfqnlCfgCmdBind   = 1
	nfqnlCfgCmdUnbind = 2
	nfqnlCopyMeta     = 1
	nfDrop            = 0
	nfAccept          = 1
	nlaTypeMask       = 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

// nfqueue is one bound netfilter queue in the caller's network namespace.
type nfqueue struct {
	fd  int
	num uint16
	seq atomic.Uint32
}

func openNFQueue(num uint16, maxLen uint32) (*nfqueue, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	q := &nfqueue{fd: fd, num: num}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// A large receive buffer: a burst of queued packets must not overflow it.
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<20)
	// A receive timeout lets the reader notice the end of its context.
	tv := syscall.NsecToTimeval(int64(200 * time.Millisecond))
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)

	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (unused)
	if err := q.request(nfqnlMsgConfig, attr(nfqaCfgCmd, cmd)); err != nil {
		q.Close()
		return nil, fmt.Errorf("binding queue %d: %w (is another delayer bound to it?)", num, err)
	}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0) // copy range: no payload
	params[4] = nfqnlCopyMeta
	ml := make([]byte, 4)
	binary.BigEndian.PutUint32(ml, maxLen)
	if err := q.request(nfqnlMsgConfig, append(attr(nfqaCfgParams, params), attr(nfqaCfgQueueMaxln, ml)...)); err != nil {
		q.Close()
		return nil, fmt.Errorf("configuring queue %d: %w", num, err)
	}
	return q, nil
}

// attr is one netlink attribute, padded to 4 bytes.
func attr(typ uint16, data []byte) []byte {
	n := 4 + len(data)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], data)
	return b
}

// message frames attrs as an nfnetlink message of the queue subsystem.
func (q *nfqueue) message(msgType uint16, flags uint16, attrs []byte) []byte {
	b := make([]byte, 16+4+len(attrs))
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|msgType)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], q.seq.Add(1))
	// nfgenmsg: family AF_UNSPEC, version 0, the queue number big-endian.
	binary.BigEndian.PutUint16(b[18:], q.num)
	copy(b[20:], attrs)
	return b
}

func (q *nfqueue) send(b []byte) error {
	return syscall.Sendto(q.fd, b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK})
}

// request sends a config message and waits for the kernel's ack.
func (q *nfqueue) request(msgType uint16, attrs []byte) error {
	msg := q.message(msgType, syscall.NLM_F_REQUEST|syscall.NLM_F_ACK, attrs)
	seq := binary.NativeEndian.Uint32(msg[8:])
	if err := q.send(msg); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := syscall.Recvfrom(q.fd, buf, 0)
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Type != syscall.NLMSG_ERROR || m.Header.Seq != seq || len(m.Data) < 4 {
				continue
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return syscall.Errno(-code)
			}
			return nil
		}
	}
	return errors.New("no answer from the kernel")
}

func (q *nfqueue) verdict(id uint32, v uint32) error {
	hdr := make([]byte, 8)
	binary.BigEndian.PutUint32(hdr[0:], v)
	binary.BigEndian.PutUint32(hdr[4:], id)
	return q.send(q.message(nfqnlMsgVerdict, syscall.NLM_F_REQUEST, attr(nfqaVerdictHdr, hdr)))
}

// packetIDs reads queued packets until ctx ends and sends each one's id,
// with its arrival time, to out. It returns on ctx's end or a fatal error.
func (q *nfqueue) packetIDs(ctx context.Context, out chan<- queued) error {
	buf := make([]byte, 1<<16)
	for ctx.Err() == nil {
		n, _, err := syscall.Recvfrom(q.fd, buf, 0)
		now := time.Now()
		if err != nil {
			switch {
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.ENOBUFS):
				// The kernel could not hand us some packets; it dropped
				// them (loss beyond what was asked, counted by the kernel).
				continue
			}
			return fmt.Errorf("reading the queue: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("parsing the queue's messages: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != nfnlSubsysQueue<<8|nfqnlMsgPacket || len(m.Data) < 4 {
				continue
			}
			if id, ok := packetID(m.Data[4:]); ok {
				out <- queued{id: id, at: now}
			}
		}
	}
	return nil
}

// packetID finds NFQA_PACKET_HDR among a packet message's attributes.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs[0:]))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & nlaTypeMask
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:]), true
		}
		attrs = attrs[min((l+3)&^3, len(attrs)):]
	}
	return 0, false
}

func (q *nfqueue) Close() error {
	cmd := []byte{nfqnlCfgCmdUnbind, 0, 0, 0}
	q.send(q.message(nfqnlMsgConfig, syscall.NLM_F_REQUEST, attr(nfqaCfgCmd, cmd)))
	return syscall.Close(q.fd)
}

type queued struct {
	id uint32
	at time.Time
}

// Serve holds every packet netfilter queues to d.Queue for d.Delay (±
// d.Jitter, never reordering) and drops a d.Loss share of them, until ctx
// ends; then it lets every packet still held go at once and unbinds. It
// counts what it held and dropped.
func (d Delayer) Serve(ctx context.Context, ready func()) (DelayStats, error) {
	var st DelayStats
	if err := d.validate(); err != nil {
		return st, err
	}
	q, err := openNFQueue(d.Queue, 1<<16)
	if err != nil {
		return st, err
	}
	defer q.Close()
	if ready != nil {
		ready()
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(d.Queue)))
	held := make(chan queued, 1<<16)
	readErr := make(chan error, 1)
	go func() {
		readErr <- q.packetIDs(ctx, held)
		close(held)
	}()
	var last time.Time // release times never decrease: no reordering
	for p := range held {
		release := p.at.Add(d.Delay)
		if d.Jitter > 0 {
			release = release.Add(time.Duration(rng.Int64N(int64(2*d.Jitter)+1)) - d.Jitter)
		}
		if release.Before(last) {
			release = last
		}
		last = release
		if wait := time.Until(release); wait > 0 && ctx.Err() == nil {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		v := uint32(nfAccept)
		if d.Loss > 0 && ctx.Err() == nil && rng.Float64() < d.Loss {
			v = nfDrop
			st.Dropped++
		}
		st.Packets++
		if err := q.verdict(p.id, v); err != nil {
			return st, fmt.Errorf("verdict for packet %d: %w", p.id, err)
		}
	}
	return st, <-readErr
}
