package org.soif.spark;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The local files the paths given to {@code load} name, exactly as the Python data
 * source's {@code expand_paths} finds them (the same files, in the same order, spelt the
 * same way, so that {@code _source} and errors read alike): a file as it is, a directory's
 * visible files (no name starting with {@code .} or {@code _}; sorted; recursively with
 * {@code recursiveFileLookup}), a glob's matches with Python's {@code glob} rules
 * ({@code *}, {@code ?}, {@code […]} within a name, {@code **} for any directories, hidden
 * names only for a pattern that starts with a dot; sorted).
 */
final class Paths {
    private Paths() {}

    private static final Pattern GLOB = Pattern.compile("[*?\\[]");
    private static final Pattern SCHEME = Pattern.compile("\\A([A-Za-z][A-Za-z0-9+.-]*):");
    private static final byte[][] MAGIC = {
        {0x1f, (byte) 0x8b}, {'B', 'Z', 'h'}, {(byte) 0xfd, '7', 'z', 'X', 'Z', 0}, {0x28, (byte) 0xb5, 0x2f, (byte) 0xfd},
    };

    /** The local path of {@code path} ({@code file:} URIs accepted), or null for a URI of another scheme. */
    static String local(String path) {
        Matcher m = SCHEME.matcher(path);
        if (m.find() && m.group(1).length() > 1) {
            if (!m.group(1).equalsIgnoreCase("file")) {
                return null;
            }
            String rest = path.substring(m.end());
            if (rest.startsWith("//")) {
                rest = rest.substring(2);
                if (!rest.startsWith("/")) {
                    int slash = rest.indexOf('/');
                    String host = slash < 0 ? rest : rest.substring(0, slash);
                    if (!host.isEmpty() && !host.equals("localhost")) {
                        throw new IllegalArgumentException(
                                "soif: " + path + ": a file: URI with a host (" + host + ") is not a local path");
                    }
                    rest = "/" + (slash < 0 ? "" : rest.substring(slash + 1));
                }
            }
            return rest;
        }
        return path;
    }

    static List<String> expand(List<String> given, boolean recursive) throws IOException {
        List<String> files = new ArrayList<>();
        for (String g : given) {
            String p = local(g);
            List<String> matches;
            if (GLOB.matcher(p).find()) {
                matches = glob(p);
                if (matches.isEmpty()) {
                    throw new FileNotFoundException("soif: no file matches the pattern " + g);
                }
            } else if (Files.exists(Path.of(p))) {
                matches = List.of(p);
            } else {
                throw new FileNotFoundException("soif: " + g + ": no such file or directory");
            }
            for (String m : matches) {
                if (Files.isDirectory(Path.of(m))) {
                    files.addAll(dirFiles(m, recursive));
                } else {
                    files.add(m);
                }
            }
        }
        return files;
    }

    private static boolean visible(String name) {
        return !(name.startsWith(".") || name.startsWith("_"));
    }

    private static String join(String dir, String name) {
        return dir.isEmpty() ? name : dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    private static List<String> names(String dir) throws IOException {
        List<String> out = new ArrayList<>();
        Path d = Path.of(dir.isEmpty() ? "." : dir);
        if (!Files.isDirectory(d)) {
            return out;
        }
        try (DirectoryStream<Path> s = Files.newDirectoryStream(d)) {
            for (Path p : s) {
                out.add(p.getFileName().toString());
            }
        }
        Collections.sort(out);
        return out;
    }

    private static List<String> dirFiles(String d, boolean recursive) throws IOException {
        List<String> out = new ArrayList<>();
        walk(d, recursive, out);
        Collections.sort(out);
        return out;
    }

    private static void walk(String d, boolean recursive, List<String> out) throws IOException {
        for (String n : names(d)) {
            String p = join(d, n);
            if (Files.isDirectory(Path.of(p))) {
                if (recursive && visible(n)) {
                    walk(p, true, out);
                }
            } else if (visible(n)) {
                out.add(p);
            }
        }
    }

    /** Python's {@code glob.glob(pattern, recursive=True)}, sorted. */
    static List<String> glob(String pattern) throws IOException {
        List<String> current = new ArrayList<>(List.of(pattern.startsWith("/") ? "/" : ""));
        String[] segments = Arrays.stream(pattern.split("/")).filter(x -> !x.isEmpty()).toArray(String[]::new);
        for (int i = 0; i < segments.length; i++) {
            String seg = segments[i];
            boolean last = i == segments.length - 1;
            List<String> next = new ArrayList<>();
            for (String c : current) {
                if (!GLOB.matcher(seg).find()) {
                    String p = join(c, seg);
                    if (last ? Files.exists(Path.of(p)) : Files.isDirectory(Path.of(p))) {
                        next.add(p);
                    }
                } else if (seg.equals("**")) {
                    // Any directories, none included; the last segment also matches files.
                    next.add(c);
                    descend(c, last, next);
                } else {
                    Pattern re = fnmatch(seg);
                    for (String n : names(c)) {
                        if (n.startsWith(".") && !seg.startsWith(".")) {
                            continue;
                        }
                        String p = join(c, n);
                        if (re.matcher(n).matches() && (last || Files.isDirectory(Path.of(p)))) {
                            next.add(p);
                        }
                    }
                }
            }
            current = next;
        }
        current.removeIf(p -> p.isEmpty());
        Collections.sort(current);
        return new ArrayList<>(new java.util.LinkedHashSet<>(current));
    }

    private static void descend(String dir, boolean files, List<String> out) throws IOException {
        for (String n : names(dir)) {
            if (n.startsWith(".")) {
                continue;
            }
            String p = join(dir, n);
            boolean isDir = Files.isDirectory(Path.of(p));
            if (isDir || files) {
                out.add(p);
            }
            if (isDir) {
                descend(p, files, out);
            }
        }
    }

    /** Python's {@code fnmatch.translate} of one name's pattern (case-sensitive, as on POSIX). */
    private static Pattern fnmatch(String pat) {
        StringBuilder re = new StringBuilder();
        for (int i = 0; i < pat.length(); i++) {
            char ch = pat.charAt(i);
            if (ch == '*') {
                re.append(".*");
            } else if (ch == '?') {
                re.append('.');
            } else if (ch == '[') {
                int j = i + 1;
                if (j < pat.length() && pat.charAt(j) == '!') {
                    j++;
                }
                if (j < pat.length() && pat.charAt(j) == ']') {
                    j++;
                }
                while (j < pat.length() && pat.charAt(j) != ']') {
                    j++;
                }
                if (j >= pat.length()) {
                    re.append("\\[");
                } else {
                    String inside = pat.substring(i + 1, j).replace("\\", "\\\\");
                    if (inside.startsWith("!")) {
                        inside = "^" + inside.substring(1);
                    } else if (inside.startsWith("^")) {
                        inside = "\\" + inside;
                    }
                    re.append('[').append(inside).append(']');
                    i = j;
                }
            } else {
                re.append(Pattern.quote(String.valueOf(ch)));
            }
        }
        return Pattern.compile(re.toString(), Pattern.DOTALL);
    }

    /** Whether the file starts as a gzip, bzip2, xz or zstd stream. */
    static boolean compressed(String path) throws IOException {
        byte[] head = new byte[6];
        int n;
        try (InputStream in = Files.newInputStream(Path.of(path))) {
            n = in.readNBytes(head, 0, head.length);
        }
        for (byte[] m : MAGIC) {
            if (n >= m.length && Arrays.equals(Arrays.copyOf(head, m.length), m)) {
                return true;
            }
        }
        return false;
    }
}
