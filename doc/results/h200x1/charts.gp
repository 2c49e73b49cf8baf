# gnuplot script written by starproj-bench
set terminal pngcairo size 1400,700 noenhanced
set style data histograms
set style histogram clustered gap 1
set yrange [0:*]
set style fill solid 0.8 border -1
set datafile missing '?'
set key outside right top
set xtics rotate by -30
set grid ytics
set output 'makespan_gpu.png'
set title 'makespan, worker set gpu, scale full'
set ylabel 'makespan (s, median)'
plot for [i=2:7] 'makespan_gpu.dat' using i:xtic(1) title columnheader(i)
set output 'utilisation_gpu.png'
set title 'utilisation, worker set gpu, scale full'
set ylabel 'mean worker busy time / makespan'
plot for [i=2:7] 'utilisation_gpu.dat' using i:xtic(1) title columnheader(i)
set output 'bytes_gpu.png'
set title 'bytes, worker set gpu, scale full'
set ylabel 'MB moved between nodes'
plot for [i=2:7] 'bytes_gpu.dat' using i:xtic(1) title columnheader(i)
