"""stored"""
