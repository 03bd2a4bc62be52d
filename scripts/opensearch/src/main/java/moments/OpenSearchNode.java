package moments;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * A single-node OpenSearch server for the tests, on 127.0.0.1 only.
 *
 * <p>The distribution (its bin/opensearch and bundled modules) is not on Maven
 * Central, so this starts a {@link Node} in-process with the four modules
 * the service needs as classpath plugins: Netty4 for HTTP and transport,
 * analysis-common for the whitespace tokenizer, reindex for
 * _delete_by_query, and painless for the scripted similarity that ranks
 * by relevance. Unlike bin/opensearch it runs no jar hell
 * check, installs no security manager, loads no native code and runs no
 * bootstrap checks; none of that matters for a throwaway test node.
 *
 * <p>Usage: {@code OpenSearchNode <home dir> <http port> [transport port]}.
 * Data under home/data, logs to standard output (stores.sh sends them to a
 * file). Runs until SIGTERM or SIGINT, then closes the node.
 */
public final class OpenSearchNode {
    /** Node's constructor that takes classpath plugins is protected. */
    private static final class TestNode extends Node {
        TestNode(Environment environment) {
            super(
                environment,
                List.of(Netty4Plugin.class, CommonAnalysisPlugin.class, ReindexPlugin.class, PainlessPlugin.class),
                true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: OpenSearchNode <home dir> <http port> [transport port]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String httpPort = args[1];
        // A fixed range (the default, 9300-9400) could meet another test
        // run's node; 0 takes any free port, which single-node never shares.
        String transportPort = args.length > 2 ? args[2] : "0";
        Files.createDirectories(home.resolve("config"));
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));

        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "moments-test")
            .put("node.name", "moments-test")
            // Loopback only. (The production bootstrap checks, heap size,
            // file descriptors, mmap count, are bin/opensearch's: a Node
            // started this way runs none.)
            .put("network.host", "127.0.0.1")
            .put("http.port", httpPort)
            .put("transport.port", transportPort)
            .put("discovery.type", "single-node")
            // A test box's disk may be nearly full: without this, indices
            // go read-only at the flood-stage watermark (95%).
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            // One node holds no replica: new indices start green, not yellow.
            .put("cluster.default_number_of_replicas", 0)
            // The client creates its indices with their mappings; a typo'd
            // index name fails instead of making a dynamic one.
            .put("action.auto_create_index", false)
            // With a small heap the real-memory parent breaker can trip on
            // garbage not yet collected; count what is accounted instead.
            .put("indices.breaker.total.use_real_memory", false)
            .build();

        Environment environment =
            InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), home.resolve("config"), () -> "moments-test");
        // Without a log4j2.properties the server logs nothing below ERROR;
        // a failed start should say why in the log stores.sh keeps.
        Files.writeString(home.resolve("config/log4j2.properties"), String.join("\n",
            "status = error",
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
            "rootLogger.level = ${sys:moments.opensearch.log.level:-info}",
            "rootLogger.appenderRef.console.ref = console",
            ""));
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName("moments-test");
        LogConfigurator.configure(environment);

        Node node;
        try {
            node = new TestNode(environment).start();
        } catch (Throwable e) {
            // Its thread pools would keep the JVM alive: exit, so the
            // caller sees a dead process rather than a silent one.
            e.printStackTrace();
            Runtime.getRuntime().halt(1);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "moments-opensearch-shutdown"));
        System.out.println("moments: OpenSearch " + org.opensearch.Version.CURRENT + " started, http port " + httpPort);
        stopped.await();
    }
}
