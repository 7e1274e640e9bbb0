import os, subprocess, shutil, tempfile
# Regenerates states/*.patch from tree/: real diff -u output, each made
# against an edited copy of a fixture file so that it lands in one state.
D=os.path.dirname(os.path.abspath(__file__)); T=D+'/tree'; S=D+'/states'
os.makedirs(S, exist_ok=True)
def read(f): return open(os.path.join(T,f)).read()
def mk(name, f, old, new, header=''):
    w=tempfile.mkdtemp()
    for side, content in (('a',old),('b',new)):
        if content is None: continue
        p=os.path.join(w,side,f); os.makedirs(os.path.dirname(p),exist_ok=True); open(p,'w').write(content)
    a = os.path.join('a',f) if old is not None else '/dev/null'
    b = os.path.join('b',f)
    out=subprocess.run(['diff','-u','--label',('a/'+f) if old is not None else '/dev/null','--label','b/'+f,a,b],cwd=w,capture_output=True,text=True).stdout
    open(os.path.join(S,name+'.patch'),'w').write(header+out)
    shutil.rmtree(w)
dev=read('net/core/dev.c')
# offset: made against a dev.c without its 3-line header comment
old=dev.replace("/*\n * NET3\tProtocol independent device support routines.\n */\n","")
mk('offset','net/core/dev.c',old,old.replace("\t\tif (budget <= 0)","\t\tif (budget <= 0 || need_resched())"),
   "Subject: [PATCH] net: stop net_rx_action when a reschedule is due\n\nMade against a tree without the header comment: applies 3 lines off.\n---\n")
# fuzz: made against a dev.c whose first context line differs
old=dev.replace("\tint budget = netdev_budget;","\tint budget = READ_ONCE(netdev_budget);")
mk('fuzz','net/core/dev.c',old,old.replace("\twhile (!list_empty(&sd->poll_list)) {\n","\twhile (!list_empty(&sd->poll_list)) {\n\t\tcond_resched();\n"),
   "net: declare work in the poll loop\n\nMade against a tree that reads netdev_budget with READ_ONCE().\n\n")
# conflict: hunk 1 applies, hunk 2 was made against a rewritten loop
old=dev.replace("\twhile (!list_empty(&sd->poll_list)) {\n\t\tstruct napi_struct *n;\n\n\t\tn = list_first_entry(&sd->poll_list, struct napi_struct, poll_list);\n\t\tbudget -= napi_poll(n, napi_weight);\n",
                "\tfor (;;) {\n\t\tstruct napi_struct *n = sd_first(sd);\n\n\t\tif (!n)\n\t\t\tbreak;\n\t\tbudget -= __napi_poll(n);\n")
mk('conflict','net/core/dev.c',old,old.replace("static int napi_weight = 64;","static int napi_weight = 128;").replace("\t\tif (budget <= 0)","\t\tif (budget <= 0 || time_after(jiffies, limit))"))
# present: the tree already has this change (it adds the tsk check)
soft=read('kernel/softirq.c')
mk('present','kernel/softirq.c',soft.replace("\tif (tsk)\n\t\twake_up_process(tsk);","\twake_up_process(tsk);"),soft,
   "softirq: do not wake a missing ksoftirqd\n\n")
# missing: patches a file the tree does not have
gro="// SPDX-License-Identifier: GPL-2.0-or-later\n#include <net/gro.h>\n\nint gro_normal_batch = 8;\n"
mk('missing','net/core/gro.c',gro,gro.replace("= 8;","= 16;"),"net: gro: raise gro_normal_batch\n\n")
# newfile: creates a file
mk('newfile','net/core/gro.c',None,gro,"net: gro: new file\n\n")
# malformed: a hunk line with no ' ', '-' or '+' in front
open(os.path.join(S,'malformed.patch'),'w').write("net: a mangled hunk\n\n--- a/net/core/dev.c\n+++ b/net/core/dev.c\n@@ -6,3 +6,3 @@\n \n-static int napi_weight = 64;\nXstatic int napi_weight = 32;\n \n")
