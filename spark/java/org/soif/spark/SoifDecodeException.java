package org.soif.spark;

/**
 * A record could not be read in FAILFAST mode: the message names the file, the byte
 * offset and the record number (thrown by the native reader).
 */
public class SoifDecodeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SoifDecodeException(String message) {
        super(message);
    }
}
