"""Cheap but meaningful pictures for the fixtures, and the odd formats.

Every scene is drawn with Pillow primitives (a cat on a sofa, a red bridge
over a river …) so a visual model sees different content per subject.
Special files: a truncated JPEG, a PNG whose header claims 50000×50000 pixels
(a decompression bomb in ~100 bytes), an SVG with a pre-rendered PNG, a tiny
PDF and a WebM stub.
"""
from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Callable

from PIL import Image, ImageDraw

Draw = Callable[[ImageDraw.ImageDraw, int, int], None]


def _sky_ground(d: ImageDraw.ImageDraw, w: int, h: int, sky: str, ground: str,
                horizon: float = 0.6) -> None:
    d.rectangle((0, 0, w, int(h * horizon)), fill=sky)
    d.rectangle((0, int(h * horizon), w, h), fill=ground)


def cat(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    d.rectangle((0, 0, w, h), fill='#d8cfc4')
    d.rounded_rectangle((w * .08, h * .55, w * .92, h * .95), 30, fill='#7d8590')
    d.ellipse((w * .3, h * .42, w * .7, h * .7), fill='#111111')
    d.ellipse((w * .58, h * .3, w * .78, h * .52), fill='#111111')
    d.polygon([(w * .6, h * .34), (w * .62, h * .22), (w * .66, h * .32)], fill='#111111')
    d.polygon([(w * .7, h * .32), (w * .74, h * .21), (w * .76, h * .34)], fill='#111111')
    d.ellipse((w * .63, h * .38, w * .66, h * .41), fill='#e6d200')
    d.ellipse((w * .7, h * .38, w * .73, h * .41), fill='#e6d200')


def dog(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#9fd3f5', '#5fae4b', 0.55)
    d.ellipse((w * .25, h * .5, w * .65, h * .75), fill='#a0642d')
    d.ellipse((w * .58, h * .38, w * .78, h * .6), fill='#a0642d')
    d.ellipse((w * .56, h * .4, w * .62, h * .55), fill='#6b3f17')
    for x in (.3, .38, .52, .6):
        d.rectangle((w * x, h * .7, w * (x + .04), h * .88), fill='#a0642d')
    d.ellipse((w * .05, h * .1, w * .25, h * .55), fill='#2f7d32')


def bridge(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#bfe3ff', '#3b7fc4', 0.62)
    d.rectangle((0, h * .45, w * .12, h), fill='#6e8b3d')
    d.rectangle((w * .88, h * .45, w, h), fill='#6e8b3d')
    d.rectangle((0, h * .42, w, h * .47), fill='#c62828')
    d.arc((w * .1, h * .3, w * .9, h * 1.1), 180, 360, fill='#c62828', width=max(3, w // 80))


def church(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#cfe8ff', '#7cb342', 0.75)
    d.rectangle((w * .2, h * .45, w * .8, h * .78), fill='#e0d6c2')
    d.polygon([(w * .15, h * .45), (w * .5, h * .3), (w * .85, h * .45)], fill='#8d3b2b')
    d.rectangle((w * .42, h * .15, w * .58, h * .45), fill='#e0d6c2')
    d.polygon([(w * .4, h * .15), (w * .5, h * .03), (w * .6, h * .15)], fill='#8d3b2b')
    d.rectangle((w * .46, h * .62, w * .54, h * .78), fill='#5d4037')


def duck(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    d.rectangle((0, 0, w, h), fill='#4f7fa8')
    d.ellipse((w * .25, h * .45, w * .7, h * .75), fill='#8d6e63')
    d.ellipse((w * .6, h * .28, w * .78, h * .5), fill='#1b5e20')
    d.polygon([(w * .77, h * .38), (w * .9, h * .41), (w * .77, h * .44)], fill='#fbc02d')
    d.rectangle((w * .6, h * .49, w * .7, h * .52), fill='#ffffff')


def sunflower(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#87ceeb', '#558b2f', 0.5)
    rnd = random.Random(7)
    for _ in range(14):
        x, y, r = rnd.uniform(0, w), rnd.uniform(h * .45, h), rnd.uniform(w * .03, w * .07)
        d.ellipse((x - r, y - r, x + r, y + r), fill='#fdd835')
        d.ellipse((x - r / 2.5, y - r / 2.5, x + r / 2.5, y + r / 2.5), fill='#5d4037')


def apple(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    d.rectangle((0, 0, w, h), fill='#fafafa')
    d.ellipse((w * .2, h * .25, w * .8, h * .85), fill='#d32f2f')
    d.rectangle((w * .48, h * .12, w * .52, h * .3), fill='#5d4037')
    d.ellipse((w * .52, h * .12, w * .7, h * .22), fill='#43a047')


def mountain(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#90caf9', '#6d8f5a', 0.8)
    d.polygon([(0, h * .8), (w * .5, h * .1), (w, h * .8)], fill='#78909c')
    d.polygon([(w * .38, h * .27), (w * .5, h * .1), (w * .62, h * .27)], fill='#ffffff')


def castle(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#b3e5fc', '#689f38', 0.7)
    d.ellipse((-w * .1, h * .55, w * 1.1, h * 1.3), fill='#7cb342')
    d.rectangle((w * .3, h * .3, w * .7, h * .6), fill='#9e9e9e')
    for x in (.25, .65):
        d.rectangle((w * x, h * .2, w * (x + .1), h * .6), fill='#8d8d8d')
    for x in range(6):
        d.rectangle((w * (.3 + x * .07), h * .26, w * (.33 + x * .07), h * .3), fill='#9e9e9e')


def lighthouse(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#ff8a65', '#1e3a5f', 0.7)
    for i in range(6):
        d.rectangle((w * .42, h * (.2 + i * .09), w * .58, h * (.29 + i * .09)),
                    fill='#ffffff' if i % 2 else '#d32f2f')
    d.polygon([(w * .4, h * .2), (w * .5, h * .1), (w * .6, h * .2)], fill='#212121')
    d.ellipse((w * .46, h * .13, w * .54, h * .19), fill='#ffeb3b')


def car(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#e3f2fd', '#616161', 0.6)
    d.rounded_rectangle((w * .15, h * .5, w * .85, h * .75), 20, fill='#e53935')
    d.rounded_rectangle((w * .3, h * .35, w * .68, h * .52), 15, fill='#e53935')
    d.rectangle((w * .34, h * .38, w * .64, h * .5), fill='#b3e5fc')
    for x in (.25, .65):
        d.ellipse((w * x, h * .68, w * (x + .12), h * .86), fill='#212121')


def boat(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#bbdefb', '#1565c0', 0.6)
    d.polygon([(w * .3, h * .62), (w * .7, h * .62), (w * .62, h * .72), (w * .38, h * .72)],
              fill='#6d4c41')
    d.polygon([(w * .5, h * .15), (w * .5, h * .6), (w * .72, h * .6)], fill='#ffffff')
    d.polygon([(w * .48, h * .2), (w * .48, h * .6), (w * .32, h * .6)], fill='#fff59d')


def painting(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    d.rectangle((0, 0, w, h), fill='#6d4c41')
    d.rectangle((w * .06, h * .08, w * .94, h * .92), fill='#fff8e1')
    d.rectangle((w * .06, h * .55, w * .94, h * .92), fill='#9ccc65')
    d.ellipse((w * .6, h * .15, w * .75, h * .35), fill='#ffb300')
    d.ellipse((w * .15, h * .3, w * .4, h * .7), fill='#33691e')


def horse(d: ImageDraw.ImageDraw, w: int, h: int) -> None:
    _sky_ground(d, w, h, '#c5e1a5', '#7cb342', 0.5)
    d.ellipse((w * .25, h * .4, w * .7, h * .65), fill='#4e342e')
    d.polygon([(w * .62, h * .45), (w * .8, h * .2), (w * .86, h * .28), (w * .7, h * .5)],
              fill='#4e342e')
    for x in (.3, .38, .55, .62):
        d.rectangle((w * x, h * .6, w * (x + .03), h * .9), fill='#4e342e')


def generic(d: ImageDraw.ImageDraw, w: int, h: int, seed: int = 1) -> None:
    rnd = random.Random(seed)
    d.rectangle((0, 0, w, h), fill=tuple(rnd.randrange(80, 220) for _ in range(3)))
    for _ in range(8):
        x0, y0 = rnd.uniform(0, w), rnd.uniform(0, h)
        x1, y1 = x0 + rnd.uniform(w * .05, w * .4), y0 + rnd.uniform(h * .05, h * .4)
        colour = tuple(rnd.randrange(0, 255) for _ in range(3))
        (d.ellipse if rnd.random() < .5 else d.rectangle)((x0, y0, x1, y1), fill=colour)


SCENES: dict[str, Draw] = {
    'cat': cat, 'dog': dog, 'bridge': bridge, 'church': church, 'duck': duck,
    'sunflower': sunflower, 'apple': apple, 'mountain': mountain,
    'castle': castle, 'lighthouse': lighthouse, 'car': car, 'boat': boat,
    'painting': painting, 'horse': horse,
}


def picture(scene: str, w: int, h: int, seed: int = 1) -> Image.Image:
    """Draw *scene* at w×h (unknown scenes get seeded random shapes)."""
    img = Image.new('RGB', (w, h), 'white')
    d = ImageDraw.Draw(img)
    if scene in SCENES:
        SCENES[scene](d, w, h)
    else:
        generic(d, w, h, seed)
    return img


def encode(img: Image.Image, fmt: str) -> bytes:
    """Encode small: JPEG q=70, optimised PNG, lossy WebP."""
    out = io.BytesIO()
    if fmt == 'JPEG':
        img.convert('RGB').save(out, 'JPEG', quality=70, optimize=True)
    elif fmt == 'PNG':
        img.save(out, 'PNG', optimize=True)
    elif fmt == 'WEBP':
        img.save(out, 'WEBP', quality=60)
    elif fmt == 'TIFF':
        img.convert('RGB').save(out, 'TIFF', compression='tiff_deflate')
    else:
        img.save(out, fmt)
    return out.getvalue()


def animated_gif(w: int, h: int) -> bytes:
    """Three-frame traffic light."""
    frames = []
    for lit in range(3):
        img = Image.new('RGB', (w, h), '#263238')
        d = ImageDraw.Draw(img)
        for i, colour in enumerate(('#e53935', '#fdd835', '#43a047')):
            box = (w * .2, h * (.05 + i * .31), w * .8, h * (.05 + i * .31) + w * .6)
            d.ellipse(box, fill=colour if i == lit else '#455a64')
        frames.append(img.convert('P'))
    out = io.BytesIO()
    frames[0].save(out, 'GIF', save_all=True, append_images=frames[1:],
                   duration=500, loop=0)
    return out.getvalue()


def truncated_jpeg(w: int, h: int) -> bytes:
    """A JPEG cut after 40 % of its bytes (an interrupted upload)."""
    data = encode(picture('cat', w, h), 'JPEG')
    return data[: int(len(data) * 0.4)]


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack('>I', len(body)) + kind + body
            + struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff))


def png_bomb(w: int = 50000, h: int = 50000) -> bytes:
    """A valid-looking PNG whose header claims w×h RGB pixels."""
    ihdr = struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)
    idat = zlib.compress(b'\x00' * (w * 3 + 1) * 4, 9)  # first rows only
    return (b'\x89PNG\r\n\x1a\n' + _chunk(b'IHDR', ihdr) + _chunk(b'IDAT', idat)
            + _chunk(b'IEND', b''))


SVG_LOGO = """<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200" viewBox="0 0 200 200">
  <title>Wikivel logo</title>
  <rect width="200" height="200" rx="24" fill="#006699"/>
  <circle cx="100" cy="90" r="50" fill="#ffffff"/>
  <circle cx="100" cy="90" r="28" fill="#990000"/>
  <rect x="40" y="150" width="120" height="18" rx="9" fill="#339966"/>
</svg>
"""


def svg_render(size: int = 200) -> bytes:
    """PNG rendering of :data:`SVG_LOGO` (drawn with the same shapes)."""
    s = size / 200
    img = Image.new('RGBA', (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((0, 0, size - 1, size - 1), 24 * s, fill='#006699')
    d.ellipse((50 * s, 40 * s, 150 * s, 140 * s), fill='#ffffff')
    d.ellipse((72 * s, 62 * s, 128 * s, 118 * s), fill='#990000')
    d.rounded_rectangle((40 * s, 150 * s, 160 * s, 168 * s), 9 * s, fill='#339966')
    return encode(img, 'PNG')


def tiny_pdf() -> bytes:
    """A minimal three-page PDF."""
    objs = [b'<< /Type /Catalog /Pages 2 0 R >>',
            b'<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >>']
    objs += [b'<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>'] * 3
    out = io.BytesIO()
    out.write(b'%PDF-1.4\n')
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b'%d 0 obj\n' % i + body + b'\nendobj\n')
    xref = out.tell()
    out.write(b'xref\n0 %d\n0000000000 65535 f \n' % (len(objs) + 1))
    for off in offsets:
        out.write(b'%010d 00000 n \n' % off)
    out.write(b'trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n'
              % (len(objs) + 1, xref))
    return out.getvalue()


def pdf_render() -> bytes:
    """First page of the report as PNG (title bar and text lines)."""
    img = Image.new('RGB', (620, 877), 'white')
    d = ImageDraw.Draw(img)
    d.rectangle((40, 40, 580, 110), fill='#0d47a1')
    for i in range(18):
        d.rectangle((40, 150 + i * 35, 580 - (i % 4) * 60, 162 + i * 35), fill='#9e9e9e')
    return encode(img, 'PNG')


def webm_stub() -> bytes:
    """EBML header of a WebM file plus padding (enough for mime sniffing)."""
    return (b'\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81'
            b'\x04\x42\xf3\x81\x08\x42\x82\x84webm\x42\x87\x81\x04\x42\x85\x81'
            b'\x02' + b'\x00' * 64)


def video_render() -> bytes:
    """Poster frame of the video: a bird against the sky."""
    img = picture('duck', 640, 360)
    return encode(img, 'PNG')
