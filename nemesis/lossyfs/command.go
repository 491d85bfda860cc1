package lossyfs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"
)

// The layer takes its commands on a unix socket in the node (Socket),
// one line each, and answers one line of JSON: Answer. A command is run
// by `check lossyfs drop` (or status) exec'd in the node, so the fault
// knows it was done, or why not, before it goes on.

// Socket is where a node's layer listens for commands.
const Socket = "/run/fencecheck/lossyfs.sock"

// Commands. Each is a word, then arguments key=value.
const (
	// CmdDrop forgets everything unsynced (lazyfs's clear-cache), with
	// torn=torn-op|torn-seq and seed=N what Torn keeps. It kills
	// nothing: whoever sends it has stopped the processes first.
	CmdDrop = "drop"
	// CmdStatus lists the files with something unsynced.
	CmdStatus = "status"
	// CmdArm arms a trigger (Trigger: at=UNIXNANO, or sync=GLOB n=N
	// timing=before|after); the layer freezes by itself when it comes.
	CmdArm = "arm"
	// CmdDisarm forgets an armed trigger that has not fired.
	CmdDisarm = "disarm"
	// CmdWait waits (timeout=DURATION, 10s by default) for the armed
	// trigger's freeze, and answers when and why it came.
	CmdWait = "wait"
	// CmdCut finishes a power cut (Layer.Cut): the freeze, now if no
	// trigger came first; the processes holding files killed; the drop,
	// with torn= and seed= as drop's.
	CmdCut = "cut"
)

// Commands are every command, for errors.
var Commands = []string{CmdArm, CmdCut, CmdDisarm, CmdDrop, CmdStatus, CmdWait}

// Dropped is what a drop forgot.
type Dropped struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Kept is how many bytes of unsynced writes a torn cut let reach the
	// disk below (Torn).
	Kept int64 `json:"kept,omitempty"`
	// Names is how many directory changes not committed by a directory
	// fsync the cut undid (Options.LoseNames).
	Names int `json:"names,omitempty"`
}

// Answer is the layer's answer to a command.
type Answer struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error,omitempty"`
	Dropped *Dropped `json:"dropped,omitempty"`
	// Freeze is when and why the power was cut (wait, cut).
	Freeze   *Freeze  `json:"freeze,omitempty"`
	Unsynced []string `json:"unsynced,omitempty"`
}

// Command sends cmd to the layer listening on socket and returns its
// answer; an answer that is not OK is an error.
func Command(socket, cmd string) (Answer, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return Answer{}, fmt.Errorf("no filesystem layer answers at %s: %w", socket, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	if _, err := fmt.Fprintln(c, cmd); err != nil {
		return Answer{}, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Answer{}, fmt.Errorf("the filesystem layer did not answer %q: %w", cmd, err)
	}
	var a Answer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		return Answer{}, fmt.Errorf("the filesystem layer's answer %q: %w", strings.TrimSpace(line), err)
	}
	if !a.OK {
		return a, fmt.Errorf("the filesystem layer refused %q: %s", cmd, a.Error)
	}
	return a, nil
}
