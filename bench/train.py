"""Training-path micro-benchmarks on CPU: encoders, one naive-mlp step with hop targets,
top-100 ranking, and reading/parsing a pages dump. Random weights, synthetic inputs.

    .venv/bin/python bench/train.py

Figures go to docs/benchmarks.md (section "Training path") with the machine.
"""
import sys
from pathlib import Path

# Run from the repository root, not bench/: bench/queue.py would shadow the stdlib `queue`.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import bz2  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
torch.set_num_threads(2)
from wikivel_bot.linker.backbone.encoders import encode_images, load_backbone
from wikivel_bot.linker.backbone.text_tower import encode_texts
from PIL import Image
bb = load_backbone("ViT-B-32", "", "random", "cpu", 2)
imgs = [Image.fromarray((np.random.default_rng(i).random((330, 330, 3))*255).astype(np.uint8)) for i in range(128)]
encode_images(bb, imgs[:8], 64)
t=time.perf_counter(); encode_images(bb, imgs, 64); ti=time.perf_counter()-t
texts = [f"item number {i}, a thing of kind {i%97} seen somewhere" for i in range(2048)]
t=time.perf_counter(); encode_texts(bb, texts); tt=time.perf_counter()-t
print(f"ViT-B-32 CPU2: images {128/ti:.1f}/s, texts {2048/tt:.1f}/s")
from wikivel_bot.linker.heads import build_heads
from wikivel_bot.train.fitting.targets import TargetBuilder, Truth
from wikivel_bot.train.fitting.losses import batch_loss
import torch.nn.functional as F
rng=np.random.default_rng(0); V=18522; NF=800_000; d=512
w=1/np.arange(1,V+1)**1.1; w/=w.sum()
sizes=rng.integers(1,4,NF)
lists=[]; 
items=rng.choice(V,size=int(sizes.sum()),p=w); o=0
for s in sizes: lists.append(items[o:o+s].tolist()); o+=s
truth=Truth.from_lists(lists,V)
# ~3 related items per item at 1 hop
a=rng.integers(0,V,60000); b=rng.integers(0,V,60000)
rel={1: np.unique(np.concatenate([a*V+b,b*V+a]))}
tb=TargetBuilder(truth, rel, 0.5)
heads=build_heads("naive", d, {"hidden_mult":2,"dropout":0.5})
imgemb=torch.randn(NF,d).half(); txt=torch.randn(V,d).half()
opt=torch.optim.AdamW(heads.parameters(), lr=1e-3)
rows_f=np.repeat(np.arange(NF), sizes); rows_i=np.concatenate([np.array(l) for l in lists])
ls=torch.tensor(math.log(1/0.07), requires_grad=True)
times=[];ttimes=[]
for step in range(12):
    sel=rng.integers(0,len(rows_f),1024)
    f=torch.from_numpy(rows_f[sel]); it=torch.from_numpy(rows_i[sel])
    t0=time.perf_counter()
    T=tb(f,it); t1=time.perf_counter()
    q=F.normalize(heads.image_head(imgemb[f].float()),dim=-1); e=F.normalize(heads.text_head(txt[it].float()),dim=-1)
    loss=batch_loss("contrastive",q,e,T,it,logit_scale=ls)
    opt.zero_grad(); loss.backward(); opt.step()
    times.append(time.perf_counter()-t0); ttimes.append(t1-t0)
print(f"naive-mlp step B=1024 d=512 hop targets: {1000*np.median(times[2:]):.1f} ms/step (targets {1000*np.median(ttimes[2:]):.1f} ms); rows/epoch 1.5M -> {1.5e6/1024*np.median(times[2:])/60:.1f} min/epoch")
from wikivel_bot.linker.search import chunked_topk
Q=F.normalize(torch.randn(2000,d),dim=-1); I=F.normalize(torch.randn(V,d),dim=-1)
t=time.perf_counter(); chunked_topk(Q,I,100); tv=time.perf_counter()-t
print(f"ranking {2000} files x {V} items top-100: {tv:.2f} s -> 10k files {5*tv:.1f} s")

# -- pages dump: read and parse (mwparserfromhell) ------------------------------------
from tests.train_support import fixture_module
from wikivel_bot.train.data.pages import iter_pages, parse_pages
m = fixture_module()
xml = m.pages_xml()
head, rest = xml.split("  <page>", 1)
pages = "  <page>" + rest.rsplit("</mediawiki>", 1)[0]
big = head + pages * 400 + "</mediawiki>\n"
open('/tmp/wikivel-bench-pages.xml.bz2','wb').write(bz2.compress(big.encode()))
t = time.perf_counter(); ps = [p for p in iter_pages('/tmp/wikivel-bench-pages.xml.bz2') if p.ns == 6]; t1 = time.perf_counter() - t
t = time.perf_counter(); parse_pages(ps); t2 = time.perf_counter() - t
print(f"{len(ps)} file pages: read {len(ps)/t1:.0f} pages/s, parse {len(ps)/t2:.0f} pages/s ({1000*t2/len(ps):.2f} ms/page)")
