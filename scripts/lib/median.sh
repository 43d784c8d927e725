# Sourced by the bench scripts (not run): median() prints the median of the
# numbers on stdin, one per line (the mean of the middle two for an even count).
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
