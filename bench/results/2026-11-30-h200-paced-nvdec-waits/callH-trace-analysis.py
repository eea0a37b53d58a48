# Summarises callH's per-wait traces (the experimental build's GM_NVDEC_TRACE lines on stderr):
# by phase of the nvdec bench (warm-up, sequential, random clips, random single frames, split
# by the gaps between them), kind of wait (r: before submitting, c: the consumer's) and pictures
# ahead at submission. Usage: xz -dc trace-paced.txt.xz | python3 callH-trace-analysis.py
import sys,collections,statistics as st
rows=[l.split() for l in sys.stdin]
rc=[r for r in rows if r[2] in 'rc']
def phase(t):
    t/=1e6
    if t<100: return 'warm'
    if t<1700: return 'seq'
    if t>RS_END: return 'first'
    if t<RS_END-1000: return 'clips'
    if t>RS_END-950: return 'single'
    return 'mid'
ts=sorted(int(r[4]) for r in rc); 
RS_END=[ts[i]/1e6 for i in range(1,len(ts)) if ts[i]-ts[i-1]>20e6][2]
g=collections.defaultdict(list)
for r in rc:
    _,tid,k,ahead,at,first,slept,reads,done,typ=r
    g[(phase(int(at)),k,int(ahead))].append((int(first),int(slept),int(reads),int(done),int(typ)))
for key in sorted(g):
    v=g[key]
    if key[0] in('warm','first','mid'): continue
    d=[x[3]/1e3 for x in v]
    print(key, 'n',len(v),'first',round(st.mean(x[0] for x in v)/1e3),'slept',round(st.mean(x[1] for x in v),2),'reads',round(st.mean(x[2] for x in v),1),
      'done p10/50/90', [round(q) for q in (sorted(d)[len(d)//10], st.median(d), sorted(d)[len(d)*9//10])], 'mean', round(st.mean(d)))
