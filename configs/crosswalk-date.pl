# Part of configs/crosswalk.fix: Unix seconds in `modified` to an ISO 8601 date (UTC);
# a value that is not a number is removed. Catmandu's own fixes have no such conversion.
sub {
    my ($data) = @_;
    my $seconds = $data->{modified};
    if (defined $seconds && !ref $seconds && $seconds =~ /^\s*(-?\d+)\s*$/) {
        my @t = gmtime($1);
        $data->{modified} = sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ",
            $t[5] + 1900, $t[4] + 1, $t[3], $t[2], $t[1], $t[0]);
    } else {
        delete $data->{modified};
    }
    return $data;
}
