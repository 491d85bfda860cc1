// A fencecheck client (protocol 1) over Apache Curator's InterProcessMutex on
// ZooKeeper. fencecheck writes one JSON request a line on stdin; we answer
// one JSON line on stdout and log to stderr. See docs/client-protocol.md and
// README.md.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public class Client {
    static final String LOCK_ROOT = "/curator-example/locks/";
    static final ObjectMapper JSON = new ObjectMapper();
    static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in));

    /** The op certainly did not happen. */
    static class Fail extends Exception {
        Fail(String why) { super(why); }
    }

    /**
     * InterProcessMutex keeps the path of its lock node to itself, but
     * offers it to subclasses: getLockPath() is the extension point Curator
     * added for this (CURATOR-84). It is the calling thread's lock node.
     */
    static class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework zk, String path) { super(zk, path); }
        String node() { return getLockPath(); }
    }

    final CuratorFramework zk;
    final HttpClient http = HttpClient.newHttpClient();
    final String storage;
    Mutex lock;            // the lock this process holds
    long session;          // the ZooKeeper session it was taken in
    volatile boolean lost; // the session was lost since

    Client(JsonNode init) throws Exception {
        List<String> endpoints = new ArrayList<>();
        init.path("service").path("endpoints").forEach(e -> endpoints.add(e.asText()));
        int ttl = init.path("lease_ttl_ms").asInt();
        zk = CuratorFrameworkFactory.builder()
            .connectString(String.join(",", endpoints))
            // The session timeout is the lease: a holder the ensemble has
            // not heard from for this long loses its lock node.
            .sessionTimeoutMs(ttl)
            .connectionTimeoutMs(ttl)
            .retryPolicy(new RetryNTimes(3, 100))
            .build();
        zk.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.LOST) lost = true;
        });
        zk.start();
        if (!zk.blockUntilConnected(20, TimeUnit.SECONDS)) throw new Exception("no ZooKeeper server answered in 20 s");
        storage = init.path("storage").path("url").asText();
    }

    long sessionId() throws Exception {
        return zk.getZookeeperClient().getZooKeeper().getSessionId();
    }

    /** Our own check that the lock is still ours: Curator says this thread
     *  holds it, we are connected, in the session the lock was taken in,
     *  and that session was not lost in between. */
    boolean holds() throws Exception {
        return lock != null && lock.isOwnedByCurrentThread() && !lost
            && zk.getZookeeperClient().isConnected() && sessionId() == session;
    }

    long acquire(String key, long deadline) throws Exception {
        Mutex m = new Mutex(zk, LOCK_ROOT + key);
        lost = false;
        long wait = deadline - System.nanoTime();
        // On false Curator has deleted its lock node (a failed delete throws).
        if (!m.acquire(wait, TimeUnit.NANOSECONDS)) throw new Fail("lock not acquired within the deadline");
        lock = m;
        session = sessionId();
        // The token: the czxid of our lock node (see README.md).
        Stat st = zk.checkExists().forPath(m.node());
        if (st == null || !holds()) throw new Exception("lock node gone right after the acquire");
        return st.getCzxid();
    }

    void release() throws Exception {
        Mutex m = lock;
        lock = null;
        if (m == null) throw new Fail("no lock held");
        boolean gone = lost || sessionId() != session;
        m.release(); // forgets the lock; its node went with the old session
        if (gone) throw new Fail("lease-lost");
    }

    JsonNode post(String path, ObjectNode body, long deadline) throws Exception {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) throw new Fail("deadline passed before the request left");
        HttpRequest req = HttpRequest.newBuilder(URI.create(storage + path))
            .timeout(Duration.ofMillis(left))
            .header("Content-Type", "application/json")
            .header("X-Deadline-Ms", Long.toString(left))
            .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
            .build();
        HttpResponse<String> resp;
        try {
            resp = http.send(req, HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException e) {
            throw new Fail("storage refused the connection");
        }
        JsonNode answer = JSON.readTree(resp.body().isEmpty() ? "{}" : resp.body());
        if (resp.statusCode() == 200) return answer;
        if (resp.statusCode() == 409 && "fenced".equals(answer.path("error").asText())) throw new Fail("fenced");
        if (resp.statusCode() == 409 && answer.path("definite").asBoolean()) throw new Fail(answer.path("error").asText());
        throw new Exception("storage answered " + resp.statusCode() + " " + resp.body()); // unknown
    }

    void op(JsonNode req, ObjectNode answer, long deadline) throws Exception {
        String f = req.path("f").asText(), key = req.path("key").asText();
        ObjectNode body = JSON.createObjectNode().put("key", key).put("token", req.path("token").asLong());
        switch (f) {
            case "acquire":
                answer.put("token", acquire(key, deadline));
                return;
            case "read":
                if (!holds()) throw new Fail("lease-lost");
                answer.put("value", post("/read", body, deadline).path("value").asLong());
                return;
            case "write":
                if (!holds()) throw new Fail("lease-lost");
                if (req.path("stop").asBoolean()) {
                    // The failpoint: checked, not yet sent. Wait for the word.
                    send(JSON.createObjectNode().put("id", req.path("id").asLong())
                        .put("type", "checkpoint").put("name", "write-checked"));
                    IN.readLine(); // {"id":..,"f":"continue"}
                }
                post("/write", body.put("value", req.path("value").asLong()), deadline);
                return;
            case "release":
                release();
                return;
            default:
                throw new Fail("unknown op " + f);
        }
    }

    static void send(ObjectNode msg) {
        System.out.println(msg.toString());
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        JsonNode init = JSON.readTree(IN.readLine());
        if (init.path("protocol").asInt() != 1) {
            send(JSON.createObjectNode().put("type", "refuse").put("protocol", 1)
                .put("error", "this client speaks protocol 1, not " + init.path("protocol")));
            return;
        }
        Client c = new Client(init);
        send(JSON.createObjectNode().put("type", "ready").put("protocol", 1));
        for (String line; (line = IN.readLine()) != null; ) {
            JsonNode req = JSON.readTree(line);
            ObjectNode answer = JSON.createObjectNode().put("id", req.path("id").asLong());
            if (req.path("f").asText().equals("clock")) {
                send(answer.put("type", "ok").put("value", System.nanoTime())); // CLOCK_MONOTONIC on Linux
                continue;
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(req.path("timeout_ms").asLong(60000));
            answer.put("call", System.nanoTime());
            try {
                c.op(req, answer, deadline);
                answer.put("type", "ok");
            } catch (Fail e) {
                answer.put("type", "fail").put("error", e.getMessage());
            } catch (HttpTimeoutException e) {
                answer.put("type", "info").put("error", "timeout: " + e.getMessage());
            } catch (Exception e) { // the outcome is unknown
                System.err.println("op " + line + ": " + e);
                answer.put("type", "info").put("error", e.toString());
            }
            answer.put("return", System.nanoTime());
            send(answer);
        }
        c.zk.close();
    }
}
